// Placement: where a serving instance's process runs and how the daemon finds
// it again (issue 12). The engines render argv and env (InstanceDriver); a
// Placement starts them on this machine (LocalPlacement) or as a job step of a
// Slurm allocation (SlurmPlacement), and returns a PlacedProcess: the durable
// identity the daemon stores with the instance, from which any later daemon
// (docs/design.md §8) probes and stops the same process.
//
//   absl::StatusOr<PlacedProcess> p = placement.Spawn(
//       {.argv = {"/usr/bin/servelab-sim", "--port", "8100"}, .log_path = "/state/logs/p.log",
//        .name = "prefill", .devices = 8});
//   absl::StatusOr<bool> alive = placement.Alive(*p);
//   absl::StatusOr<std::string> host = placement.Address(*p);  // connect to host:8100
//   absl::Status s = placement.Stop(*p, absl::Seconds(10));
//
// No shell anywhere: argv arrays only. Implementations are thread-safe.
#ifndef SERVELAB_DAEMON_PLACEMENT_PLACEMENT_H_
#define SERVELAB_DAEMON_PLACEMENT_PLACEMENT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace servelab::placement {

inline constexpr char kLocalKind[] = "local";
inline constexpr char kSlurmKind[] = "slurm";

struct PlacementRequest {
  std::vector<std::string> argv;  // argv[0] is an absolute path on the target node.
  // Added to a clean base environment (placement::kInheritedEnv), as for a
  // local launch. Under Slurm, Slurm sets CUDA_VISIBLE_DEVICES itself (see
  // slurm_placement.h); other variables reach the process unchanged.
  std::map<std::string, std::string> env;
  // stdout+stderr, appended. Under Slurm the node writes it, so for a remote
  // node the path must be on a file system both machines share.
  std::string log_path;
  // A short label ("prefill") for step names and messages; any characters
  // outside [A-Za-z0-9_-] are replaced.
  std::string name;
  // Node to run on; empty: this machine (local) or any node of the
  // allocation (Slurm).
  std::string node;
  // Accelerators the process needs; a Slurm GRES count (local: ignored, the
  // engine's env selects devices).
  int devices = 0;
};

// What the daemon stores to find the process again.
struct PlacedProcess {
  std::string kind;  // kLocalKind or kSlurmKind.
  // Local: the instance itself. Slurm: its srun, the step's local handle,
  // which need not outlive the daemon: the step is the identity.
  int pid = 0;
  int64_t start_ticks = 0;  // Of pid (/proc/PID/stat field 22).
  std::string job_id;       // Slurm: "42".
  std::string step_id;      // Slurm: "42.3", as scontrol and scancel take it.
  std::string step_name;    // Slurm: unique per Spawn; must match step_id's name.
  std::string node;         // Where it runs: "localhost" or a Slurm NodeName.
};

class Placement {
 public:
  virtual ~Placement() = default;

  // kLocalKind or kSlurmKind: the PlacedProcess.kind this placement handles.
  virtual std::string Kind() const = 0;

  // Starts the request's process; it outlives the daemon. INVALID_ARGUMENT
  // for a bad request (empty argv, relative argv[0], no log path);
  // FAILED_PRECONDITION when it cannot start (the message says why, with the
  // launcher's log tail); DEADLINE_EXCEEDED when Slurm did not start the step
  // in time (resources busy).
  virtual absl::StatusOr<PlacedProcess> Spawn(const PlacementRequest& request) = 0;

  // Whether the same process (not a recycled pid or step) still runs.
  // UNAVAILABLE when it cannot tell (Slurm controller unreachable): the
  // caller must then keep the instance, not forget it. INVALID_ARGUMENT for a
  // process of another kind.
  virtual absl::StatusOr<bool> Alive(const PlacedProcess& process) = 0;

  // SIGTERM, then SIGKILL after `grace`. OK when it is already gone.
  virtual absl::Status Stop(const PlacedProcess& process, absl::Duration grace) = 0;

  // The host (address) to connect to for the process's ports.
  virtual absl::StatusOr<std::string> Address(const PlacedProcess& process) = 0;
};

}  // namespace servelab::placement

#endif  // SERVELAB_DAEMON_PLACEMENT_PLACEMENT_H_
