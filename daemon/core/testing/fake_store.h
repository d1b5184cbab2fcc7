// An in-memory Store for unit tests of the core, with a switch to make the
// next write fail (to check that a failed call leaves nothing behind).
// Thread-safe.
#ifndef SERVELAB_DAEMON_CORE_TESTING_FAKE_STORE_H_
#define SERVELAB_DAEMON_CORE_TESTING_FAKE_STORE_H_

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "daemon/core/store.h"

namespace servelab::core::testing {

class FakeStore : public Store {
 public:
  absl::StatusOr<std::string> CreateExperiment(const v1::Experiment& experiment,
                                               const Event& event) override;
  absl::StatusOr<std::string> CreateExperimentWithRecords(
      const v1::Experiment& experiment, const Event& event,
      const std::vector<v1::RequestRecord>& records) override;
  absl::Status UpdateExperiment(const v1::Experiment& experiment, const Event& event) override;
  absl::StatusOr<v1::Experiment> GetExperiment(std::string_view id) override;
  absl::StatusOr<std::vector<v1::Experiment>> ListExperiments(
      const ExperimentFilter& filter) override;
  absl::StatusOr<std::vector<ExperimentCount>> CountExperiments() override;
  absl::StatusOr<std::map<v1::StageName, absl::Duration>> MeanRecentStageDurations(
      int runs) override;
  absl::StatusOr<std::string> LatestRunOf(v1::StageName stage, v1::StageStatus status) override;
  absl::StatusOr<std::vector<Event>> ListEvents(std::string_view experiment_id) override;
  absl::Status AppendRequests(const std::vector<v1::RequestRecord>& records,
                              Durability durability) override;
  absl::StatusOr<std::vector<v1::RequestRecord>> ListRequests(std::string_view experiment_id,
                                                              v1::Phase phase,
                                                              int attempt) override;
  absl::Status PutInstance(const v1::ServingInstance& instance) override;
  absl::Status RemoveInstance(v1::Side side) override;
  absl::StatusOr<std::vector<v1::ServingInstance>> ListInstances() override;

  // The next write returns this error instead of writing.
  void FailNextWrite(absl::Status error);
  int writes() const;
  // The `limit` of every ListExperiments call so far, in order.
  std::vector<int> listing_limits() const;
  // Each phase whose records were appended, with how durably.
  std::set<std::pair<v1::Phase, Durability>> record_durabilities() const;

 private:
  absl::Status TakeFailure() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  int next_id_ ABSL_GUARDED_BY(mu_) = 1;
  int writes_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> listing_limits_ ABSL_GUARDED_BY(mu_);
  absl::Status next_failure_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::Experiment> experiments_ ABSL_GUARDED_BY(mu_);
  std::vector<Event> events_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::RequestRecord> requests_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<v1::Phase, Durability>> record_durabilities_ ABSL_GUARDED_BY(mu_);
  std::map<v1::Side, v1::ServingInstance> instances_ ABSL_GUARDED_BY(mu_);
};

}  // namespace servelab::core::testing

#endif  // SERVELAB_DAEMON_CORE_TESTING_FAKE_STORE_H_
