#include "daemon/core/testing/fake_store.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace servelab::core::testing {

absl::Status FakeStore::TakeFailure() {
  absl::Status failure = next_failure_;
  next_failure_ = absl::OkStatus();
  if (failure.ok()) ++writes_;
  return failure;
}

void FakeStore::FailNextWrite(absl::Status error) {
  absl::MutexLock lock(&mu_);
  next_failure_ = std::move(error);
}

int FakeStore::writes() const {
  absl::MutexLock lock(&mu_);
  return writes_;
}

absl::StatusOr<std::string> FakeStore::CreateExperiment(const v1::Experiment& experiment,
                                                        const Event& event) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = TakeFailure(); !s.ok()) return s;
  v1::Experiment stored = experiment;
  stored.set_id(absl::StrCat("exp-", next_id_++));
  Event e = event;
  e.experiment_id = stored.id();
  e.seq = static_cast<int64_t>(events_.size()) + 1;
  experiments_.push_back(stored);
  events_.push_back(e);
  return stored.id();
}

absl::StatusOr<std::string> FakeStore::CreateExperimentWithRecords(
    const v1::Experiment& experiment, const Event& event,
    const std::vector<v1::RequestRecord>& records) {
  SERVELAB_ASSIGN_OR_RETURN(std::string id, CreateExperiment(experiment, event));
  absl::MutexLock lock(&mu_);
  for (v1::RequestRecord record : records) {
    record.set_experiment_id(id);
    requests_.push_back(std::move(record));
  }
  return id;
}

absl::Status FakeStore::UpdateExperiment(const v1::Experiment& experiment, const Event& event) {
  absl::MutexLock lock(&mu_);
  for (v1::Experiment& stored : experiments_) {
    if (stored.id() != experiment.id()) continue;
    if (absl::Status s = TakeFailure(); !s.ok()) return s;
    stored = experiment;
    Event e = event;
    e.experiment_id = experiment.id();
    e.seq = static_cast<int64_t>(events_.size()) + 1;
    events_.push_back(e);
    return absl::OkStatus();
  }
  return absl::NotFoundError(experiment.id());
}

absl::StatusOr<v1::Experiment> FakeStore::GetExperiment(std::string_view id) {
  absl::MutexLock lock(&mu_);
  for (const v1::Experiment& stored : experiments_) {
    if (stored.id() == id) return stored;
  }
  return absl::NotFoundError(std::string(id));
}

absl::StatusOr<std::vector<v1::Experiment>> FakeStore::ListExperiments(
    const ExperimentFilter& filter) {
  absl::MutexLock lock(&mu_);
  std::vector<v1::Experiment> out;
  for (const v1::Experiment& e : experiments_) {
    if (!filter.scenario.empty() && e.spec().scenario() != filter.scenario) continue;
    if (filter.state != v1::EXPERIMENT_STATE_UNSPECIFIED && e.state() != filter.state) continue;
    out.push_back(e);
  }
  return out;
}

absl::StatusOr<std::vector<Event>> FakeStore::ListEvents(std::string_view experiment_id) {
  absl::MutexLock lock(&mu_);
  std::vector<Event> out;
  for (const Event& e : events_) {
    if (e.experiment_id == experiment_id) out.push_back(e);
  }
  return out;
}

absl::Status FakeStore::AppendRequests(const std::vector<v1::RequestRecord>& records) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = TakeFailure(); !s.ok()) return s;
  requests_.insert(requests_.end(), records.begin(), records.end());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::RequestRecord>> FakeStore::ListRequests(
    std::string_view experiment_id, v1::Phase phase, int attempt) {
  absl::MutexLock lock(&mu_);
  std::vector<v1::RequestRecord> out;
  for (const v1::RequestRecord& r : requests_) {
    if (r.experiment_id() == experiment_id && r.phase() == phase &&
        (attempt == 0 || r.attempt() == attempt)) {
      out.push_back(r);
    }
  }
  return out;
}

absl::Status FakeStore::PutInstance(const v1::ServingInstance& instance) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = TakeFailure(); !s.ok()) return s;
  instances_[instance.side()] = instance;
  return absl::OkStatus();
}

absl::Status FakeStore::RemoveInstance(v1::Side side) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = TakeFailure(); !s.ok()) return s;
  instances_.erase(side);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::ServingInstance>> FakeStore::ListInstances() {
  absl::MutexLock lock(&mu_);
  std::vector<v1::ServingInstance> out;
  for (const auto& [side, instance] : instances_) out.push_back(instance);
  return out;
}

}  // namespace servelab::core::testing
