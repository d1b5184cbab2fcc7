#include "daemon/core/ledger.h"

#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/crash_points.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace servelab::core {

using google::protobuf::util::TimeUtil;

google::protobuf::Timestamp ToTimestamp(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

absl::Time FromTimestamp(const google::protobuf::Timestamp& t) {
  return absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(t));
}

absl::Duration FromDuration(const google::protobuf::Duration& d) {
  return absl::Nanoseconds(TimeUtil::DurationToNanoseconds(d));
}

Ledger::Ledger(Store& store, Clock& clock) : store_(store), clock_(clock) {}

absl::StatusOr<v1::Experiment> Ledger::Create(v1::Experiment experiment, const EventText& text,
                                              const std::vector<v1::RequestRecord>& records) {
  absl::MutexLock lock(&write_mu_);
  // A create is always synced: its id is the first fact a client is told.
  Event event{.at = clock_.Now(), .kind = text.kind, .detail = text.detail};
  SERVELAB_ASSIGN_OR_RETURN(std::string id,
                            records.empty()
                                ? store_.CreateExperiment(experiment, event)
                                : store_.CreateExperimentWithRecords(experiment, event, records));
  experiment.set_id(id);
  Notify(experiment);
  return experiment;
}

absl::StatusOr<v1::Experiment> Ledger::Update(std::string_view id, const Mutation& mutate) {
  absl::MutexLock lock(&write_mu_);
  absl::StatusOr<v1::Experiment> experiment = store_.GetExperiment(id);
  if (absl::IsNotFound(experiment.status())) {
    return absl::NotFoundError(
        absl::StrCat("id: experiment \"", absl::CHexEscape(absl::string_view(id.data(), id.size())),
                     "\" not found"));
  }
  SERVELAB_RETURN_IF_ERROR(experiment.status());
  SERVELAB_ASSIGN_OR_RETURN(EventText text, mutate(*experiment));
  const absl::Time now = clock_.Now();
  *experiment->mutable_updated_at() = ToTimestamp(now);
  Event event{.experiment_id = experiment->id(),
              .at = now,
              .kind = text.kind,
              .detail = text.detail,
              .durability = text.durability};
  CrashPoint("ledger.commit.before");
  SERVELAB_RETURN_IF_ERROR(store_.UpdateExperiment(*experiment, event));
  CrashPoint("ledger.commit.after");
  Notify(*experiment);
  return experiment;
}

int Ledger::Subscribe(const std::string& experiment_id, Listener listener) {
  absl::MutexLock lock(&listeners_mu_);
  int subscription = next_subscription_++;
  subscriptions_[subscription] = Subscription{experiment_id, std::move(listener)};
  return subscription;
}

void Ledger::Unsubscribe(int subscription) {
  absl::MutexLock lock(&listeners_mu_);
  subscriptions_.erase(subscription);
}

void Ledger::Notify(const v1::Experiment& experiment) {
  // Listeners run under the lock so that once Unsubscribe returns, its
  // listener is never called again (its owner may then be destroyed).
  absl::MutexLock lock(&listeners_mu_);
  for (const auto& [id, subscription] : subscriptions_) {
    if (subscription.experiment_id.empty() || subscription.experiment_id == experiment.id()) {
      subscription.listener(experiment);
    }
  }
}

}  // namespace servelab::core
