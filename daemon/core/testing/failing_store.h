// A Store that forwards to another (a FakeStore, or a real SqliteStore) and
// fails chosen experiment writes, the way LevelDB's tests wrap an Env
// (SpecialEnv : EnvWrapper) to inject faults. A rule picks the writes by
// their event — its kind and a part of its detail — lets the first `after`
// of them through and fails the next `times`; reads always go through.
//
//   testing::FakeStore real;
//   testing::FailingStore store(real);
//   // Every try of the final SUCCEEDED write fails, as with a full disk.
//   store.FailWrites({.kind = "state", .detail = "-> succeeded", .times = -1},
//                    absl::UnavailableError("database is locked"));
//
// Thread-safe.
#ifndef SERVELAB_DAEMON_CORE_TESTING_FAILING_STORE_H_
#define SERVELAB_DAEMON_CORE_TESTING_FAILING_STORE_H_

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/store.h"

namespace servelab::core::testing {

class FailingStore : public Store {
 public:
  struct Rule {
    std::string kind;    // The event kind ("stage", "state", ...); empty: any.
    std::string detail;  // A part of the event detail; empty: any.
    int after = 0;       // Matching writes let through first (the Nth fails: N-1).
    int times = 1;       // Matching writes failed after those; -1: every one.
  };

  // `base` must outlive this store.
  explicit FailingStore(Store& base) : base_(base) {}

  // Replaces any earlier rule.
  void FailWrites(Rule rule, absl::Status error);
  // Writes failed so far.
  int failures() const;

  absl::StatusOr<std::string> CreateExperiment(const v1::Experiment& experiment,
                                               const Event& event) override;
  absl::StatusOr<std::string> CreateExperimentWithRecords(
      const v1::Experiment& experiment, const Event& event,
      const std::vector<v1::RequestRecord>& records) override;
  absl::Status UpdateExperiment(const v1::Experiment& experiment, const Event& event) override;
  absl::StatusOr<v1::Experiment> GetExperiment(std::string_view id) override {
    return base_.GetExperiment(id);
  }
  absl::StatusOr<std::vector<v1::Experiment>> ListExperiments(
      const ExperimentFilter& filter) override {
    return base_.ListExperiments(filter);
  }
  absl::StatusOr<std::vector<ExperimentCount>> CountExperiments() override {
    return base_.CountExperiments();
  }
  absl::StatusOr<std::map<v1::StageName, absl::Duration>> MeanRecentStageDurations(
      int runs) override {
    return base_.MeanRecentStageDurations(runs);
  }
  absl::StatusOr<std::string> LatestRunOf(v1::StageName stage, v1::StageStatus status) override {
    return base_.LatestRunOf(stage, status);
  }
  absl::StatusOr<std::vector<Event>> ListEvents(std::string_view experiment_id) override {
    return base_.ListEvents(experiment_id);
  }
  absl::Status AppendRequests(const std::vector<v1::RequestRecord>& records,
                              Durability durability) override {
    return base_.AppendRequests(records, durability);
  }
  absl::StatusOr<std::vector<v1::RequestRecord>> ListRequests(std::string_view experiment_id,
                                                              v1::Phase phase,
                                                              int attempt) override {
    return base_.ListRequests(experiment_id, phase, attempt);
  }
  absl::Status PutInstance(const v1::ServingInstance& instance) override {
    return base_.PutInstance(instance);
  }
  absl::Status RemoveInstance(v1::Side side) override { return base_.RemoveInstance(side); }
  absl::StatusOr<std::vector<v1::ServingInstance>> ListInstances() override {
    return base_.ListInstances();
  }

 private:
  // The error for a write of `event`, OK to let it through.
  absl::Status Check(const Event& event);

  Store& base_;
  mutable absl::Mutex mu_;
  Rule rule_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);  // OK: no rule.
  int failures_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace servelab::core::testing

#endif  // SERVELAB_DAEMON_CORE_TESTING_FAILING_STORE_H_
