#include "daemon/core/testing/failing_store.h"

#include "absl/strings/match.h"

namespace servelab::core::testing {

void FailingStore::FailWrites(Rule rule, absl::Status error) {
  absl::MutexLock lock(&mu_);
  rule_ = std::move(rule);
  error_ = std::move(error);
}

int FailingStore::failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

absl::Status FailingStore::Check(const Event& event) {
  absl::MutexLock lock(&mu_);
  if (error_.ok()) return absl::OkStatus();
  if (!rule_.kind.empty() && event.kind != rule_.kind) return absl::OkStatus();
  if (!absl::StrContains(event.detail, rule_.detail)) return absl::OkStatus();
  if (rule_.after > 0) {
    --rule_.after;
    return absl::OkStatus();
  }
  if (rule_.times == 0) return absl::OkStatus();
  if (rule_.times > 0) --rule_.times;
  ++failures_;
  return error_;
}

absl::StatusOr<std::string> FailingStore::CreateExperiment(const v1::Experiment& experiment,
                                                           const Event& event) {
  if (absl::Status s = Check(event); !s.ok()) return s;
  return base_.CreateExperiment(experiment, event);
}

absl::StatusOr<std::string> FailingStore::CreateExperimentWithRecords(
    const v1::Experiment& experiment, const Event& event,
    const std::vector<v1::RequestRecord>& records) {
  if (absl::Status s = Check(event); !s.ok()) return s;
  return base_.CreateExperimentWithRecords(experiment, event, records);
}

absl::Status FailingStore::UpdateExperiment(const v1::Experiment& experiment, const Event& event) {
  if (absl::Status s = Check(event); !s.ok()) return s;
  return base_.UpdateExperiment(experiment, event);
}

}  // namespace servelab::core::testing
