// The Slurm command lines SlurmPlacement runs and the parsers of their
// output: pure functions, so that what is sent to Slurm and what is read back
// is tested without a cluster (slurm_cli_test.cc). Written against Slurm
// 22.05 (Debian 12); the tests in tests/slurm/ run them against a real one.
#ifndef SERVELAB_DAEMON_PLACEMENT_SLURM_CLI_H_
#define SERVELAB_DAEMON_PLACEMENT_SLURM_CLI_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "daemon/placement/placement.h"

namespace servelab::placement {

// How job steps share the allocation.
enum class StepSharing {
  // srun --overlap: steps share the allocation's CPUs and GRES. Slurm hands
  // every step all of the job's GPUs (CUDA_VISIBLE_DEVICES lists them all),
  // so the engine's own device variable (ASCEND_RT_VISIBLE_DEVICES, which
  // Slurm leaves alone) must select the devices. `devices` is not sent.
  kOverlap,
  // srun --exact --cpus-per-task C --gres NAME:devices: Slurm gives each step
  // its own CPUs and GPUs and sets CUDA_VISIBLE_DEVICES to them; a step that
  // does not fit waits (Spawn then times out). The allocation is exclusive so
  // that the node's CPUs are the job's.
  kExclusive,
};

struct SlurmOptions {
  // The allocation: an existing job, or empty to create one with
  // `salloc --no-shell` from the fields below.
  std::string job_id;
  // Release() cancels an existing job_id too: set when the daemon re-adopts
  // an allocation it created before a restart. A user's job is never
  // cancelled otherwise.
  bool own_job = false;
  std::string job_name = "servelab";
  int nodes = 1;
  std::string gres;                  // Per node, e.g. "gpu:16"; empty: none.
  std::string partition;             // Empty: the cluster's default.
  std::string account;               // Empty: the user's default.
  std::string time_limit;            // salloc --time, e.g. "7-00:00:00"; empty: the partition's.
  bool exclusive_allocation = true;  // salloc --exclusive: the daemon owns the nodes.
  std::vector<std::string> salloc_args;                  // Appended as given.
  absl::Duration allocation_timeout = absl::Minutes(5);  // salloc --immediate.

  StepSharing sharing = StepSharing::kOverlap;
  std::string device_gres = "gpu";     // kExclusive: --gres=<device_gres>:<devices>.
  int cpus_per_step = 1;               // kExclusive: --cpus-per-task.
  std::vector<std::string> srun_args;  // Appended before the instance's argv.
  absl::Duration step_start_timeout = absl::Seconds(60);
  absl::Duration command_timeout = absl::Seconds(30);  // Each squeue/scontrol/scancel.

  // Environment of every Slurm command and step on top of the daemon's
  // inherited variables (SLURM_CONF for a test cluster). Its PATH, when
  // given, is where the Slurm binaries are looked up; else the daemon's.
  std::map<std::string, std::string> env;
};

// salloc's argv for `options` (`salloc` is its absolute path).
std::vector<std::string> SallocArgv(const std::string& salloc, const SlurmOptions& options);

// srun's argv for one instance: a one-task step of `job_id` named
// `step_name`, its output appended to the request's log, then request.argv.
std::vector<std::string> SrunArgv(const std::string& srun, const SlurmOptions& options,
                                  const std::string& job_id, const std::string& step_name,
                                  const PlacementRequest& request);

// A step name unique to one Spawn: "servelab-<label>-<16 hex>", the label
// reduced to [A-Za-z0-9_-].
std::string UniqueStepName(absl::string_view label);

// The job id from salloc's "Granted job allocation 42"; NOT_FOUND otherwise.
absl::StatusOr<std::string> ParseGrantedJobId(absl::string_view salloc_output);

// One line of `squeue --steps -h -o "%i|%j|%N"`.
struct StepRow {
  std::string step_id;  // "42.3"
  std::string name;
  std::string nodes;  // Slurm hostlist ("node[1-2]"); one node for our steps.
};
std::vector<StepRow> ParseStepRows(absl::string_view squeue_output);
std::optional<StepRow> FindStepByName(const std::vector<StepRow>& rows, absl::string_view name);

// The Key=Value fields of one `scontrol -o show ...` record. A value may
// contain spaces (OS=Linux 6.1 #1 SMP): a word without '=' continues the
// previous value.
std::map<std::string, std::string> ParseScontrolRecord(absl::string_view line);

// scontrol's answer for a step or job that no longer exists, as opposed to a
// failure to ask (controller unreachable).
bool SaysNotFound(absl::string_view scontrol_output);

// "42" and "42.3" as Slurm prints them.
bool IsJobId(absl::string_view id);
bool IsStepId(absl::string_view id);

}  // namespace servelab::placement

#endif  // SERVELAB_DAEMON_PLACEMENT_SLURM_CLI_H_
