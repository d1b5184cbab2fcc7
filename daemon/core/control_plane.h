// ControlPlane: the daemon's use cases behind the API — submit (resolve base,
// apply delta, validate, freeze, plan, store), get, list, watch, resume,
// cancel, summary. The gRPC service is a thin adapter over this class; it
// knows nothing of gRPC or SQL.
//
// Errors: INVALID_ARGUMENT naming the field path at fault; NOT_FOUND for an
// unknown experiment id; FAILED_PRECONDITION when the experiment's state
// forbids the call (e.g. cancelling a finished one), and for Submit and
// Resume once the executor latched a ledger write error (naming it). Nothing
// is stored when a call fails. Cancel of a running experiment returns at once,
// still RUNNING; it becomes CANCELLED at the runner's next safe point.
//
// Thread-safe. Listeners are called on the writer's thread, after the write
// is committed, and must not block.
#ifndef SERVELAB_DAEMON_CORE_CONTROL_PLANE_H_
#define SERVELAB_DAEMON_CORE_CONTROL_PLANE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/clock.h"
#include "daemon/core/ledger.h"
#include "daemon/core/store.h"
#include "servelab/v1/service.pb.h"

namespace servelab::core {

// What executes queued experiments: the stage runner. Optional, so the
// control plane can be used (and tested) on its own.
class ExperimentExecutor {
 public:
  virtual ~ExperimentExecutor() = default;
  // Called after a submit or resume committed; must not block.
  virtual void Enqueue(const std::string& id) = 0;
  // Asks a running experiment to stop and returns without waiting; the
  // executor records it as cancelled at its next safe point.
  virtual absl::Status CancelRunning(const std::string& id) = 0;
  // Not OK once the executor lost a ledger write for good (the error it
  // latched): the daemon then accepts no new work until restarted.
  virtual absl::Status LatchedError() { return absl::OkStatus(); }
  // The experiment holding the accelerator lane ("" when free) and its stage.
  virtual std::pair<std::string, v1::StageName> LaneOwner() = 0;
  // Stops the hot deployment's `side` (UNSPECIFIED: every side) on the lane,
  // and forgets it. FAILED_PRECONDITION while an experiment holds the lane.
  virtual absl::StatusOr<v1::ReleaseDeploymentResponse> Release(v1::Side side) {
    return absl::FailedPreconditionError("this daemon has no stage runner");
  }
  // What `servelab plan` shows: each side's launch command for `spec`.
  virtual std::vector<v1::RenderedCommand> RenderCommands(const v1::ExperimentSpec& spec) {
    return {};
  }
};

class ControlPlane {
 public:
  // `store` and `clock` must outlive the control plane.
  ControlPlane(Store& store, Clock& clock);
  ~ControlPlane();

  // Set once, before serving; must outlive the control plane.
  void SetExecutor(ExperimentExecutor* executor) { executor_ = executor; }
  // A paused daemon stores and plans experiments but its executor runs none.
  void SetPaused(bool paused) { paused_ = paused; }
  Ledger& ledger() { return ledger_; }

  // With request.validate_only() the returned experiment has no id and
  // nothing is stored.
  absl::StatusOr<v1::Experiment> Submit(const v1::SubmitExperimentRequest& request);
  absl::StatusOr<v1::Experiment> Get(std::string_view id);
  // One page (docs/design.md §12): INVALID_ARGUMENT for a negative page_size
  // or a page_token this daemon did not hand out.
  absl::StatusOr<v1::ListExperimentsResponse> List(const v1::ListExperimentsRequest& request);
  absl::StatusOr<v1::Experiment> Resume(const v1::ResumeExperimentRequest& request);
  absl::StatusOr<v1::Experiment> Cancel(std::string_view id);
  absl::StatusOr<v1::Summary> Summary();
  // A run measured by another tool: validated, frozen and stored with its
  // records in one transaction, then analyzed. INVALID_ARGUMENT names the
  // record and field at fault; nothing is stored then.
  absl::StatusOr<v1::Experiment> Import(const v1::ImportExperimentRequest& request);
  // The stored records of `id`'s `phase` (UNSPECIFIED: the analyzed phase),
  // following an analysis-only experiment to the records it analyzed.
  absl::StatusOr<std::vector<v1::RequestRecord>> ListRecords(
      const v1::ListRequestRecordsRequest& request);
  absl::StatusOr<v1::ReleaseDeploymentResponse> Release(v1::Side side);
  // Experiments per state ("queued", "running", ...), every state listed.
  absl::StatusOr<std::map<std::string, int64_t>> CountByState();

  // Calls `listener` with every committed change of experiment `id`.
  using Listener = std::function<void(const v1::Experiment&)>;
  int Subscribe(const std::string& id, Listener listener);
  void Unsubscribe(int subscription);

 private:
  // Stores a new experiment (id assigned) and hands it to the executor.
  absl::StatusOr<v1::Experiment> Create(v1::Experiment experiment);
  // The spec the request names (text, message, or a base's frozen spec with
  // its file hashes cleared), and the base experiment when there is one.
  absl::Status ReadSource(const v1::SubmitExperimentRequest& request, v1::ExperimentSpec& spec,
                          std::optional<v1::Experiment>& base_experiment);
  // The plan's prediction averages each stage's most recent successful runs.
  static constexpr int kPredictionRuns = 20;
  // The best succeeded experiment of each scenario (Summary.best).
  absl::StatusOr<std::map<std::string, v1::ScenarioBest>> BestPerScenario();
  // What the prefix cache holds: what the newest experiment with a
  // succeeded formal load left there; "" when there is none.
  absl::StatusOr<std::string> CacheState();
  // Summary.next_step from the summary's other facts; `latest` is the most
  // recent experiment, null when there is none.
  void FillNextStep(v1::Summary& summary, const v1::Experiment* latest);

  Store& store_;
  Clock& clock_;
  Ledger ledger_;
  ExperimentExecutor* executor_ = nullptr;
  bool paused_ = false;

  // Held from a QUEUED commit to its Enqueue, so concurrent submissions and
  // resumes reach the queue in the order they were committed (ids ascend).
  absl::Mutex enqueue_mu_;

  int best_subscription_ = 0;
  absl::Mutex best_mu_;
  bool best_loaded_ ABSL_GUARDED_BY(best_mu_) = false;
  std::map<std::string, v1::ScenarioBest> best_ ABSL_GUARDED_BY(best_mu_);

  // Why a queued experiment waits, in words.
  const char* QueuedBlocker() const;
  // FAILED_PRECONDITION naming the executor's latched error, if any.
  absl::Status CheckAcceptingWork();
};

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_CONTROL_PLANE_H_
