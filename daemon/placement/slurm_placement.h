// SlurmPlacement: instances as job steps of one Slurm allocation (issue 12).
//
// The daemon holds one allocation: a job it creates with `salloc --no-shell`
// or one the user gives (SlurmOptions.job_id). Each Spawn starts
//   srun --jobid=J --nodes=1 --ntasks=1 --job-name=<unique> --output=LOG ... argv
// through the engines' process launcher (own session, so srun survives a
// daemon exit; its own messages go to LOG.srun). srun is only the step's
// local handle: the durable identity is the step id ("J.S") with the unique
// step name, found by polling `squeue --steps --jobs J` for that name (srun
// prints no machine-readable step id). Spawn returns only once srun
// --verbose also logged that the node started the task: a step the
// controller lists may not be launched yet, and one whose srun dies then
// never starts and never ends. A step outlives its srun (even a SIGKILLed
// one), so a later daemon needs only the stored PlacedProcess:
//   Alive:   scontrol -o show step J.S  (State=RUNNING and the same Name)
//   Stop:    scancel --signal=TERM J.S, after `grace` --signal=KILL, then scancel J.S
//   Address: NodeAddr of `scontrol -o show node N`
// Release() ends the allocation if this daemon owns it. Slurm accounting
// (sacct) is not used: many clusters, and the test cluster, run without it.
//
//   absl::StatusOr<std::unique_ptr<SlurmPlacement>> slurm =
//       SlurmPlacement::Create({.gres = "gpu:16", .env = {{"SLURM_CONF", conf}}});
//   absl::StatusOr<PlacedProcess> p = (*slurm)->Spawn(request);  // p->step_id == "42.0"
//   ... (*slurm)->Release();
//
// Thread-safe. The Slurm binaries are looked up once, in Create. No shell.
#ifndef SERVELAB_DAEMON_PLACEMENT_SLURM_PLACEMENT_H_
#define SERVELAB_DAEMON_PLACEMENT_SLURM_PLACEMENT_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/placement/command_runner.h"
#include "daemon/placement/placement.h"
#include "daemon/placement/slurm_cli.h"

namespace servelab::placement {

class SlurmPlacement : public Placement {
 public:
  // Finds salloc, srun, squeue, scontrol and scancel, then creates the
  // allocation or checks that options.job_id is RUNNING. NOT_FOUND: a binary
  // is missing. FAILED_PRECONDITION: salloc failed or gave up after
  // allocation_timeout, or the given job is not running (the message quotes
  // Slurm). UNAVAILABLE: the controller cannot be reached.
  static absl::StatusOr<std::unique_ptr<SlurmPlacement>> Create(SlurmOptions options);

  // Keeps the allocation: instances outlive the daemon (docs/design.md §8).
  ~SlurmPlacement() override = default;

  const std::string& job_id() const { return job_id_; }
  bool owns_job() const { return owns_job_; }

  // The allocation's nodes (expanded hostlist).
  absl::StatusOr<std::vector<std::string>> Nodes();

  std::string Kind() const override { return kSlurmKind; }
  absl::StatusOr<PlacedProcess> Spawn(const PlacementRequest& request) override;
  absl::StatusOr<bool> Alive(const PlacedProcess& process) override;
  absl::Status Stop(const PlacedProcess& process, absl::Duration grace) override;
  absl::StatusOr<std::string> Address(const PlacedProcess& process) override;

  // Cancels the allocation (and so every step) when this object owns it, and
  // waits until Slurm no longer lists it as pending, running or completing.
  // A borrowed job is left alone. Spawn fails afterwards.
  absl::Status Release();

 private:
  struct Tools {
    std::string salloc, srun, squeue, scontrol, scancel;
  };

  SlurmPlacement(SlurmOptions options, Tools tools);

  absl::StatusOr<CommandResult> Slurm(const std::vector<std::string>& argv) const;
  absl::Status Allocate();
  absl::Status CheckJobRunning() const;
  // The state squeue prints for our job; empty when Slurm no longer knows it.
  absl::StatusOr<std::string> JobState() const;
  // Polls squeue until the step named `step_name` appears or srun exits.
  // ... and srun's log (after log_offset) says the node started its task.
  absl::StatusOr<StepRow> WaitForStep(const std::string& step_name, int srun_pid,
                                      int64_t srun_start_ticks, const std::string& srun_log,
                                      uintmax_t log_offset);
  absl::StatusOr<bool> StepRunning(const PlacedProcess& process) const;
  // Waits until the step no longer runs; true when it ended in time.
  absl::StatusOr<bool> WaitStepEnded(const PlacedProcess& process, absl::Duration timeout) const;
  absl::StatusOr<std::string> NodeAddress(const std::string& node);

  // Constant after construction (job_id_ and owns_job_ are set in Create).
  const SlurmOptions options_;
  const Tools tools_;
  std::string job_id_;
  bool owns_job_ = false;

  absl::Mutex mu_;
  std::map<std::string, std::string> node_addresses_ ABSL_GUARDED_BY(mu_);
  bool released_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace servelab::placement

#endif  // SERVELAB_DAEMON_PLACEMENT_SLURM_PLACEMENT_H_
