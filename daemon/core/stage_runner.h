// StageRunner: executes queued experiments as persisted state machines
// (docs/design.md §5–6). Two threads:
// - the CPU worker runs preflight (and analyze/decide), so the next
//   experiment is prepared while the current one's load runs;
// - the accelerator lane runs launch … drain_confirm for one experiment at a
//   time, in queue order, and is released only once drain is confirmed.
// Every stage transition is committed through the Ledger with its event.
//
//   StageRunner runner(control_plane.ledger(), engine, driver, metrics, options);
//   SERVELAB_RETURN_IF_ERROR(runner.Recover());   // before serving
//   control_plane.SetExecutor(&runner);
//   runner.Start();
//   ...
//   runner.Shutdown();
//
// Thread-safe.
#ifndef SERVELAB_DAEMON_CORE_STAGE_RUNNER_H_
#define SERVELAB_DAEMON_CORE_STAGE_RUNNER_H_

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/control_plane.h"
#include "daemon/core/engine.h"
#include "daemon/core/ledger.h"
#include "daemon/core/load_driver.h"
#include "daemon/core/runner_metrics.h"
#include "daemon/core/stages.h"

namespace servelab::core {

class StageRunner : public ExperimentExecutor {
 public:
  struct Options {
    std::string log_dir;  // Instance logs go here.
    absl::Duration stop_grace = absl::Seconds(5);
    absl::Duration drain_poll = absl::Milliseconds(20);
    // At most this often a running load's progress is committed.
    absl::Duration progress_interval = absl::Milliseconds(200);
  };

  // Everything borrowed must outlive the runner.
  StageRunner(Ledger& ledger, Engine& engine, LoadDriver& load, RunnerMetrics& metrics,
              Options options);
  ~StageRunner() override;

  // After a daemon restart: re-adopts instances that are still the same live
  // processes (and forgets the others), marks every experiment that was
  // running as failed with the class its stages imply — a formal load is
  // never re-sent by itself — and queues the experiments that were queued.
  absl::Status Recover();
  void Start();
  // Cancels what runs, waits for the threads. Instances keep running: the
  // hot deployment survives a daemon restart.
  void Shutdown();

  void Enqueue(const std::string& id) override;
  absl::Status CancelRunning(const std::string& id) override;
  std::vector<v1::RenderedCommand> RenderCommands(const v1::ExperimentSpec& spec) override;
  std::pair<std::string, v1::StageName> LaneOwner() override {
    Lane current = lane();
    return {current.owner, current.stage};
  }

  struct Lane {
    std::string owner;  // Empty when free.
    v1::StageName stage = v1::STAGE_UNSPECIFIED;
  };
  Lane lane();

 private:
  using Task = std::function<void()>;

  void CpuLoop();
  void LaneLoop();
  void Prepare(const std::string& id);
  // `released`: when the previous experiment released the lane.
  void RunLane(const std::string& id, absl::Time released);
  void RunAnalysis(const std::string& id);

  // One stage: RUNNING → body → SUCCEEDED, or FAILED (returns the error).
  // The stage starts at `cursor` — where the previous one ended — so the
  // bookkeeping between stages belongs to a named stage and no second goes
  // unattributed; `cursor` moves to this stage's end.
  absl::Status RunStage(const std::string& id, v1::StageName stage,
                        const std::function<absl::StatusOr<Counters>(const v1::Experiment&)>& body,
                        absl::Time& cursor);
  // REUSE and SKIP stages, recorded in one write with zero-length spans at `at`.
  absl::Status MarkStages(const std::string& id, const std::vector<v1::StageName>& stages,
                          absl::Time at);
  // The experiment becomes FAILED with the class `stage` implies.
  void FailExperiment(const std::string& id, v1::StageName stage, const absl::Status& error);
  void FinishCancelled(const std::string& id);
  // Re-plans the lane stages against what runs now.
  absl::Status Replan(const std::string& id);
  void SetBlocker(const std::string& id, const std::string& blocker);
  std::shared_ptr<std::atomic<bool>> CancelFlag(const std::string& id);
  StageEnv Env(std::atomic<bool>& cancel);

  Ledger& ledger_;
  Engine& engine_;
  LoadDriver& load_;
  RunnerMetrics& metrics_;
  const Options options_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Task> cpu_tasks_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> lane_queue_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> cancel_ ABSL_GUARDED_BY(mu_);
  Lane lane_ ABSL_GUARDED_BY(mu_);
  // When the lane was last released: waiting before it is queue wait.
  absl::Time lane_released_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::thread cpu_thread_;
  std::thread lane_thread_;
};

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_STAGE_RUNNER_H_
