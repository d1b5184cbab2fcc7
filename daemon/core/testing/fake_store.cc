#include "daemon/core/testing/fake_store.h"

#include <algorithm>
#include <vector>

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

std::vector<int> FakeStore::listing_limits() const {
  absl::MutexLock lock(&mu_);
  return listing_limits_;
}

absl::StatusOr<std::vector<v1::Experiment>> FakeStore::ListExperiments(
    const ExperimentFilter& filter) {
  absl::MutexLock lock(&mu_);
  listing_limits_.push_back(filter.limit);
  std::vector<v1::Experiment> out;
  bool after = filter.after_id.empty();
  std::vector<const v1::Experiment*> order;
  for (const v1::Experiment& e : experiments_) order.push_back(&e);
  if (filter.newest_first) std::reverse(order.begin(), order.end());
  for (const v1::Experiment* listed : order) {
    const v1::Experiment& e = *listed;
    if (!after) {
      after = e.id() == filter.after_id;
      continue;
    }
    if (!filter.scenario.empty() && e.spec().scenario() != filter.scenario) continue;
    if (filter.state != v1::EXPERIMENT_STATE_UNSPECIFIED && e.state() != filter.state) continue;
    if (filter.limit > 0 && static_cast<int>(out.size()) == filter.limit) break;
    out.push_back(e);
  }
  return out;
}

absl::StatusOr<std::vector<ExperimentCount>> FakeStore::CountExperiments() {
  absl::MutexLock lock(&mu_);
  std::map<std::pair<v1::ExperimentState, v1::FailureClass>, ExperimentCount> counts;
  for (const v1::Experiment& e : experiments_) {
    ExperimentCount& c = counts[{e.state(), e.failure_class()}];
    c.state = e.state();
    c.failure_class = e.failure_class();
    ++c.count;
    c.latest_id = e.id();
  }
  std::vector<ExperimentCount> out;
  for (auto& [key, c] : counts) out.push_back(std::move(c));
  return out;
}

absl::StatusOr<std::string> FakeStore::LatestRunOf(v1::StageName stage, v1::StageStatus status) {
  absl::MutexLock lock(&mu_);
  std::string latest;
  int64_t latest_end = 0;
  for (const v1::Experiment& e : experiments_) {
    for (const v1::Stage& s : e.stages()) {
      if (s.name() != stage || s.action() != v1::STAGE_ACTION_RUN || s.status() != status ||
          !s.has_ended_at()) {
        continue;
      }
      const int64_t end = s.ended_at().seconds() * 1'000'000'000LL + s.ended_at().nanos();
      if (latest.empty() || end > latest_end) {
        latest = e.id();
        latest_end = end;
      }
    }
  }
  return latest;
}

absl::StatusOr<std::map<v1::StageName, absl::Duration>> FakeStore::MeanRecentStageDurations(
    int runs) {
  absl::MutexLock lock(&mu_);
  std::map<v1::StageName, std::vector<std::pair<absl::Time, absl::Duration>>> done;
  for (const v1::Experiment& e : experiments_) {
    for (const v1::Stage& s : e.stages()) {
      if (s.action() != v1::STAGE_ACTION_RUN || s.status() != v1::STAGE_STATUS_SUCCEEDED ||
          !s.has_started_at() || !s.has_ended_at()) {
        continue;
      }
      const absl::Time end =
          absl::FromUnixSeconds(s.ended_at().seconds()) + absl::Nanoseconds(s.ended_at().nanos());
      const absl::Time start = absl::FromUnixSeconds(s.started_at().seconds()) +
                               absl::Nanoseconds(s.started_at().nanos());
      done[s.name()].push_back({end, end - start});
    }
  }
  std::map<v1::StageName, absl::Duration> mean;
  for (auto& [name, runs_of_stage] : done) {
    std::sort(runs_of_stage.begin(), runs_of_stage.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    if (static_cast<int>(runs_of_stage.size()) > runs) runs_of_stage.resize(runs);
    absl::Duration sum;
    for (const auto& [end, d] : runs_of_stage) sum += d;
    mean[name] = sum / static_cast<int64_t>(runs_of_stage.size());
  }
  return mean;
}

absl::StatusOr<std::vector<Event>> FakeStore::ListEvents(std::string_view experiment_id) {
  absl::MutexLock lock(&mu_);
  std::vector<Event> out;
  for (const Event& e : events_) {
    if (e.experiment_id == experiment_id) out.push_back(e);
  }
  return out;
}

absl::Status FakeStore::AppendRequests(const std::vector<v1::RequestRecord>& records,
                                       Durability durability) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = TakeFailure(); !s.ok()) return s;
  requests_.insert(requests_.end(), records.begin(), records.end());
  for (const v1::RequestRecord& r : records) record_durabilities_.emplace(r.phase(), durability);
  return absl::OkStatus();
}

std::set<std::pair<v1::Phase, Durability>> FakeStore::record_durabilities() const {
  absl::MutexLock lock(&mu_);
  return record_durabilities_;
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
