#include "daemon/service/serve_lab_service.h"

#include <google/protobuf/util/message_differencer.h>
#include <google/protobuf/util/time_util.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/labels.h"
#include "daemon/service/logging.h"
#include "daemon/service/status_mapping.h"

namespace servelab::service {
namespace {

absl::Status RequireId(const std::string& id) {
  if (id.empty()) return absl::InvalidArgumentError("id: must not be empty");
  return absl::OkStatus();
}

// Every update is a whole snapshot, so one that keeps the state of the one
// queued before it replaces that one: a client that reads slowly (or never)
// holds at most one queued snapshot per state it has yet to see, and this
// bounds the rest (a resume cycles the states).
constexpr size_t kMaxPendingUpdates = 16;

}  // namespace

// One WatchExperiment stream. Everything below — the reactor's own state and
// every StartWrite/Finish — happens under Shared::mu, which the control
// plane's listener also takes; the listener holds a shared_ptr to Shared so
// that it stays safe even when called after the reactor is gone.
class ServeLabService::WatchReactor : public grpc::ServerWriteReactor<v1::Experiment> {
 public:
  WatchReactor(ServeLabService& service, std::string id)
      : service_(service), id_(std::move(id)), shared_(std::make_shared<Shared>()) {
    {
      absl::MutexLock lock(&shared_->mu);
      shared_->reactor = this;
    }
    absl::Status valid = RequireId(id_);
    if (valid.ok()) valid = service_.AddWatch(this);
    if (!valid.ok()) {
      absl::MutexLock lock(&shared_->mu);
      FinishLocked(valid);
      return;
    }
    registered_ = true;
    // Subscribe before reading, so that no change committed in between is
    // lost; the read result then supersedes anything older in the queue.
    subscription_ = service_.control_plane_.Subscribe(
        id_, [shared = shared_](const v1::Experiment& experiment) {
          absl::MutexLock lock(&shared->mu);
          if (shared->reactor != nullptr) shared->reactor->EnqueueLocked(experiment);
        });
    absl::StatusOr<v1::Experiment> current = service_.control_plane_.Get(id_);
    absl::MutexLock lock(&shared_->mu);
    if (!current.ok()) {
      FinishLocked(current.status());
      return;
    }
    while (!pending_.empty() && IsNotNewer(pending_.front(), *current)) pending_.pop_front();
    pending_.push_front(*std::move(current));
    read_initial_ = true;
    MaybeWriteLocked();
  }

  void EndForShutdown() {
    absl::MutexLock lock(&shared_->mu);
    FinishLocked(absl::UnavailableError("servelabd is shutting down"));
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&shared_->mu);
    writing_ = false;
    if (!ok) {
      FinishLocked(absl::CancelledError("the stream broke"));
    } else if (IsFinal(last_written_state_)) {
      FinishLocked(absl::OkStatus());
    } else {
      MaybeWriteLocked();
    }
    if (deferred_finish_.has_value() && !writing_) {
      absl::Status status = *std::move(deferred_finish_);
      deferred_finish_.reset();
      FinishNowLocked(status);
    }
  }

  void OnCancel() override {
    absl::MutexLock lock(&shared_->mu);
    FinishLocked(absl::CancelledError("the client cancelled the watch"));
  }

  void OnDone() override {
    {
      absl::MutexLock lock(&shared_->mu);
      shared_->reactor = nullptr;
    }
    if (subscription_ != 0) service_.control_plane_.Unsubscribe(subscription_);
    if (registered_) service_.RemoveWatch(this);
    delete this;
  }

 private:
  struct Shared {
    absl::Mutex mu;
    WatchReactor* reactor ABSL_GUARDED_BY(mu) = nullptr;
  };

  // True when `update` adds nothing to `current`, read after it.
  static bool IsNotNewer(const v1::Experiment& update, const v1::Experiment& current) {
    if (update.updated_at() < current.updated_at()) return true;
    return google::protobuf::util::MessageDifferencer::Equals(update, current);
  }

  void EnqueueLocked(const v1::Experiment& experiment) {
    if (finish_started_) return;
    if (!pending_.empty() && pending_.back().state() == experiment.state()) {
      pending_.back() = experiment;
      return;  // A write is in flight, or there would be nothing queued.
    }
    if (pending_.size() >= kMaxPendingUpdates) pending_.pop_front();
    pending_.push_back(experiment);
    MaybeWriteLocked();
  }

  void MaybeWriteLocked() {
    if (!read_initial_ || writing_ || finish_started_ || pending_.empty()) return;
    current_ = std::move(pending_.front());
    pending_.pop_front();
    last_written_state_ = current_.state();
    writing_ = true;
    StartWrite(&current_);
  }

  // Finishes now, or after the write in flight completes.
  void FinishLocked(const absl::Status& status) {
    if (finish_started_) return;
    finish_started_ = true;
    pending_.clear();
    if (writing_) {
      deferred_finish_ = status;
    } else {
      FinishNowLocked(status);
    }
  }

  void FinishNowLocked(const absl::Status& status) {
    service_.metrics_.RecordRpc("WatchExperiment", status.code());
    if (!status.ok() && status.code() != absl::StatusCode::kCancelled) {
      Logger("service")->info("WatchExperiment {}: {}", id_, status.ToString());
    }
    Finish(ToGrpcStatus(status));
  }

  // Constant after construction.
  ServeLabService& service_;
  const std::string id_;
  const std::shared_ptr<Shared> shared_;
  bool registered_ = false;
  int subscription_ = 0;

  // Guarded by shared_->mu (not annotated: the mutex lives in Shared).
  std::deque<v1::Experiment> pending_;
  v1::Experiment current_;  // The message of the write in flight.
  v1::ExperimentState last_written_state_ = v1::EXPERIMENT_STATE_UNSPECIFIED;
  bool read_initial_ = false;
  bool writing_ = false;
  bool finish_started_ = false;
  std::optional<absl::Status> deferred_finish_;
};

ServeLabService::ServeLabService(core::ControlPlane& control_plane, Metrics& metrics)
    : control_plane_(control_plane), metrics_(metrics) {}

ServeLabService::~ServeLabService() = default;

void ServeLabService::EndWatches() {
  absl::MutexLock lock(&mu_);
  ending_watches_ = true;
  for (WatchReactor* watch : watches_) watch->EndForShutdown();
}

absl::Status ServeLabService::AddWatch(WatchReactor* watch) {
  absl::MutexLock lock(&mu_);
  if (ending_watches_) return absl::UnavailableError("servelabd is shutting down");
  if (watches_.size() >= kMaxWatches) {
    return absl::ResourceExhaustedError(
        absl::StrCat("servelabd serves at most ", kMaxWatches,
                     " watches at once; wait for one to end or use GetExperiment"));
  }
  watches_.insert(watch);
  return absl::OkStatus();
}

void ServeLabService::RemoveWatch(WatchReactor* watch) {
  absl::MutexLock lock(&mu_);
  watches_.erase(watch);
}

grpc::ServerUnaryReactor* ServeLabService::Finish(grpc::CallbackServerContext* context,
                                                  std::string_view method,
                                                  const absl::Status& status) {
  metrics_.RecordRpc(method, status.code());
  if (!status.ok()) Logger("service")->debug("{}: {}", method, status.ToString());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* ServeLabService::SubmitExperiment(
    grpc::CallbackServerContext* context, const v1::SubmitExperimentRequest* request,
    v1::SubmitExperimentResponse* reply) {
  absl::StatusOr<v1::Experiment> experiment = control_plane_.Submit(*request);
  if (experiment.ok()) {
    *reply->mutable_experiment() = *std::move(experiment);
    Logger("service")->info(
        "{} {}", request->validate_only() ? "planned" : "submitted",
        request->validate_only() ? request->spec_name() : reply->experiment().id());
  }
  return Finish(context, "SubmitExperiment", experiment.status());
}

grpc::ServerUnaryReactor* ServeLabService::GetExperiment(grpc::CallbackServerContext* context,
                                                         const v1::GetExperimentRequest* request,
                                                         v1::Experiment* reply) {
  absl::Status status = RequireId(request->id());
  if (status.ok()) {
    absl::StatusOr<v1::Experiment> experiment = control_plane_.Get(request->id());
    if (experiment.ok()) *reply = *std::move(experiment);
    status = experiment.status();
  }
  return Finish(context, "GetExperiment", status);
}

grpc::ServerUnaryReactor* ServeLabService::ListExperiments(
    grpc::CallbackServerContext* context, const v1::ListExperimentsRequest* request,
    v1::ListExperimentsResponse* reply) {
  absl::StatusOr<v1::ListExperimentsResponse> page = control_plane_.List(*request);
  if (page.ok()) *reply = *std::move(page);
  return Finish(context, "ListExperiments", page.status());
}

grpc::ServerWriteReactor<v1::Experiment>* ServeLabService::WatchExperiment(
    grpc::CallbackServerContext* context, const v1::WatchExperimentRequest* request) {
  return new WatchReactor(*this, request->id());
}

grpc::ServerUnaryReactor* ServeLabService::ResumeExperiment(
    grpc::CallbackServerContext* context, const v1::ResumeExperimentRequest* request,
    v1::Experiment* reply) {
  absl::Status status = RequireId(request->id());
  if (status.ok()) {
    absl::StatusOr<v1::Experiment> experiment = control_plane_.Resume(*request);
    if (experiment.ok()) *reply = *std::move(experiment);
    status = experiment.status();
  }
  return Finish(context, "ResumeExperiment", status);
}

grpc::ServerUnaryReactor* ServeLabService::CancelExperiment(
    grpc::CallbackServerContext* context, const v1::CancelExperimentRequest* request,
    v1::Experiment* reply) {
  absl::Status status = RequireId(request->id());
  if (status.ok()) {
    absl::StatusOr<v1::Experiment> experiment = control_plane_.Cancel(request->id());
    if (experiment.ok()) *reply = *std::move(experiment);
    status = experiment.status();
  }
  return Finish(context, "CancelExperiment", status);
}

grpc::ServerUnaryReactor* ServeLabService::GetSummary(grpc::CallbackServerContext* context,
                                                      const v1::GetSummaryRequest* request,
                                                      v1::Summary* reply) {
  absl::StatusOr<v1::Summary> summary = control_plane_.Summary();
  if (summary.ok()) {
    *reply = *std::move(summary);
    // Not serving while recovering or shutting down, and once the control
    // plane refuses work (its next_step then says why).
    if (!serving_ && reply->serving()) {
      v1::NextStep& next = *reply->mutable_next_step();
      next.Clear();
      next.set_action(v1::NextStep::RETRY);
      next.set_reason("servelabd is recovering (or shutting down)");
    }
    reply->set_serving(serving_ && reply->serving());
  }
  return Finish(context, "GetSummary", summary.status());
}

// One ListRequestRecords stream: the records are read in one store call,
// then written one message at a time (each write waits for the previous).
class ServeLabService::RecordsReactor : public grpc::ServerWriteReactor<v1::RequestRecord> {
 public:
  RecordsReactor(ServeLabService& service, const v1::ListRequestRecordsRequest& request)
      : service_(service) {
    absl::Status status = RequireId(request.id());
    absl::StatusOr<std::vector<v1::RequestRecord>> records =
        status.ok() ? service_.control_plane_.ListRecords(request) : status;
    if (!records.ok()) {
      End(records.status());
      return;
    }
    records_ = *std::move(records);
    WriteNext();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return End(absl::CancelledError("the stream broke"));
    WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  void WriteNext() {
    if (next_ == records_.size()) return End(absl::OkStatus());
    StartWrite(&records_[next_++]);
  }
  void End(const absl::Status& status) {
    service_.metrics_.RecordRpc("ListRequestRecords", status.code());
    Finish(ToGrpcStatus(status));
  }

  ServeLabService& service_;
  std::vector<v1::RequestRecord> records_;
  size_t next_ = 0;
};

grpc::ServerWriteReactor<v1::RequestRecord>* ServeLabService::ListRequestRecords(
    grpc::CallbackServerContext* context, const v1::ListRequestRecordsRequest* request) {
  return new RecordsReactor(*this, *request);
}

grpc::ServerUnaryReactor* ServeLabService::ImportExperiment(
    grpc::CallbackServerContext* context, const v1::ImportExperimentRequest* request,
    v1::Experiment* reply) {
  absl::StatusOr<v1::Experiment> experiment = control_plane_.Import(*request);
  if (experiment.ok()) {
    *reply = *std::move(experiment);
    Logger("service")->info("imported {} ({} records from {})", reply->id(),
                            request->records_size(), request->external().tool());
  }
  return Finish(context, "ImportExperiment", experiment.status());
}

grpc::ServerUnaryReactor* ServeLabService::ReleaseDeployment(
    grpc::CallbackServerContext* context, const v1::ReleaseDeploymentRequest* request,
    v1::ReleaseDeploymentResponse* reply) {
  absl::StatusOr<v1::ReleaseDeploymentResponse> response =
      v1::Side_IsValid(request->side())
          ? control_plane_.Release(request->side())
          : absl::InvalidArgumentError(absl::StrCat("side: unknown value ", request->side()));
  if (response.ok()) {
    *reply = *std::move(response);
    Logger("service")->info("released {} instance(s)", reply->released_size());
  }
  return Finish(context, "ReleaseDeployment", response.status());
}

}  // namespace servelab::service
