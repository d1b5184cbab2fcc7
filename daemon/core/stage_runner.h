// StageRunner: executes queued experiments as persisted state machines
// (docs/design.md §5–6). Two threads:
// - the CPU worker runs preflight (and analyze/decide), so the next
//   experiment is prepared while the current one's load runs;
// - the accelerator lane runs launch … drain_confirm for one experiment at a
//   time, in queue order, and is released only once drain is confirmed.
// Every stage transition is committed through the Ledger with its event.
//
// A ledger write that fails is retried (Options::write_attempts); one that
// still fails is latched, as LevelDB latches bg_error_: from then on the
// runner writes nothing more, starts no new work and stops what runs (a
// formal load is cancelled), so that storage never moves on without the
// runner or the runner without storage. LatchedError() names the write; the
// control plane refuses new work and the daemon reports NOT_SERVING. What
// was left RUNNING is re-classified by Recover() after a restart.
//
// All time is read and waited on through the ledger's Clock.
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
#include "daemon/core/baseline_index.h"
#include "daemon/core/control_plane.h"
#include "daemon/core/instance_driver.h"
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
    // A failed ledger write is tried this many times in all, this far
    // apart, before the error is latched.
    int write_attempts = 3;
    absl::Duration write_retry_pause = absl::Milliseconds(100);
    // Called once, on the thread that latched the error, outside any lock
    // of the runner; must not block nor call back into the runner.
    std::function<void(const absl::Status&)> on_latched_error;
  };

  // Everything borrowed must outlive the runner.
  StageRunner(Ledger& ledger, InstanceDriver& instances, LoadDriver& load, RunnerMetrics& metrics,
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
  // Sets the experiment's cancel flag and returns at once; the runner
  // records CANCELLED at the next safe point (a running formal load is
  // stopped and drained first), which Watch and Get then report.
  absl::Status CancelRunning(const std::string& id) override;
  absl::Status LatchedError() override;
  std::vector<v1::RenderedCommand> RenderCommands(const v1::ExperimentSpec& spec) override;
  // Takes the lane (refused while an experiment holds it), stops the side's
  // instances, forgets them and gives the lane back; queued experiments
  // then relaunch what they need.
  absl::StatusOr<v1::ReleaseDeploymentResponse> Release(v1::Side side) override;
  std::pair<std::string, v1::StageName> LaneOwner() override {
    Lane current = lane();
    return {current.owner, current.stage};
  }

  struct Lane {
    std::string owner;  // Empty when free.
    v1::StageName stage = v1::STAGE_UNSPECIFIED;
    // The owner already failed LOAD_END_UNKNOWN and only waits for the
    // instances to drain: a release may stop them, which ends the wait.
    bool holding_for_drain = false;
  };
  Lane lane();

 private:
  using Task = std::function<void()>;

  // Writes that wait for the lane's next commit of the same experiment: a
  // preparing stage's end and a run of reused or skipped stages ride on the
  // next stage's start, one commit where there were two (docs/design.md §5,
  // "Durability"). Only writes that cannot decline are carried.
  struct Carried {
    std::vector<Ledger::Mutation> writes;
    std::vector<v1::StageName> ended;               // The stages they end.
    std::vector<std::function<void()>> on_written;  // Once they are committed.
    bool Holds(v1::StageName stage) const;
  };

  void CpuLoop();
  void LaneLoop();
  void Prepare(const std::string& id);
  // `released`: when the previous experiment released the lane.
  void RunLane(const std::string& id, absl::Time released);
  // Where the first lane stage's span starts (the rest was queue wait).
  absl::Time LaneStart(const std::string& id, absl::Time released);
  void SetLaneStage(v1::StageName stage);
  // The formal load stage, committing its progress as it runs.
  absl::Status RunFormalLoad(const std::string& id, StageEnv& env, const v1::Experiment& e,
                             absl::Time& cursor, Carried& carried);
  // After drain_confirm failed: holds the lane until the instances drain.
  void HoldLaneUntilDrained(const std::string& id);
  void RunAnalysis(const std::string& id);
  // Release's work while it holds the lane.
  absl::StatusOr<v1::ReleaseDeploymentResponse> StopInstances(v1::Side side);

  // Ledger::Update, retried while the write (not `mutate`) fails; after
  // Options::write_attempts the error is latched and returned. Once latched,
  // returns the latched error without writing.
  absl::StatusOr<v1::Experiment> Commit(const std::string& id, const Ledger::Mutation& mutate);
  // Commit of `carried`'s writes and then `mutate`, as one write whose event
  // joins their details; `carried` is emptied once that is committed.
  absl::StatusOr<v1::Experiment> CommitWith(const std::string& id, Carried& carried,
                                            const Ledger::Mutation& mutate);
  // Commits what `carried` still holds, if anything.
  void Flush(const std::string& id, Carried& carried);
  // Commit for writes whose failure needs no handling beyond the latch.
  void Record(const std::string& id, const Ledger::Mutation& mutate);
  void Latch(const absl::Status& error);
  bool latched();

  // One stage: RUNNING → body → SUCCEEDED, or FAILED (returns the error).
  // The stage starts at `cursor` — where the previous one ended — so the
  // bookkeeping between stages belongs to a named stage and no second goes
  // unattributed; `cursor` moves to this stage's end. With `carried`, its
  // start writes what that holds, and a preparing stage that succeeded
  // leaves its end there for the next write instead of committing it.
  absl::Status RunStage(const std::string& id, v1::StageName stage,
                        const std::function<absl::StatusOr<Counters>(const v1::Experiment&)>& body,
                        absl::Time& cursor, Carried* carried = nullptr);
  // REUSE and SKIP stages, recorded in one write with zero-length spans at
  // `at`; with `carried`, left there for the next write.
  absl::Status MarkStages(const std::string& id, const std::vector<v1::StageName>& stages,
                          absl::Time at, Carried* carried = nullptr);
  // The experiment becomes FAILED with the class `stage` implies.
  void FailExperiment(const std::string& id, v1::StageName stage, const absl::Status& error);
  void FinishCancelled(const std::string& id);
  // Re-plans the lane stages against what runs now.
  absl::Status Replan(const std::string& id);
  // Forgets (and stops what is left of) every stored instance that no longer
  // runs, so that the plan relaunches its side; one event on `id` each.
  absl::Status ForgetLostInstances(const std::string& id);
  void SetBlocker(const std::string& id, const std::string& blocker);
  std::shared_ptr<std::atomic<bool>> CancelFlag(const std::string& id);
  StageEnv Env(std::atomic<bool>& cancel);

  Ledger& ledger_;
  BaselineIndex baselines_{ledger_};
  InstanceDriver& instances_;
  LoadDriver& load_;
  RunnerMetrics& metrics_;
  const Options options_;
  // Caches the lane reset after the last drained load; only the lane thread
  // touches it, so it needs no lock.
  std::optional<EmptyCaches> empty_caches_;
  // What cache_reset saw of prefill, for the cache_seed after it; the lane's too.
  std::optional<SeedStart> seed_start_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Task> cpu_tasks_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> lane_queue_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> cancel_ ABSL_GUARDED_BY(mu_);
  // The first write that failed for good; OK until then.
  absl::Status latched_error_ ABSL_GUARDED_BY(mu_);
  Lane lane_ ABSL_GUARDED_BY(mu_);
  // A release holds the lane: the lane loop takes no experiment meanwhile.
  bool releasing_ ABSL_GUARDED_BY(mu_) = false;
  // When the lane was last released: waiting before it is queue wait.
  absl::Time lane_released_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::thread cpu_thread_;
  std::thread lane_thread_;
};

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_STAGE_RUNNER_H_
