// PlacementSet: which Placement launches a spec's instances, and which one
// reaches a stored instance again, also after a daemon restart
// (docs/design.md §9). The daemon owns one; every engine shares it.
//
//   PlacementSet placements({.slurm_env = {{"SLURM_CONF", conf}}});
//   absl::StatusOr<Placement*> p = placements.ForSpec(spec.deployment().placement());
//   absl::StatusOr<PlacedProcess> placed = (*p)->Spawn(request);
//   v1::PlacedProcess stored = ToProto(*placed, placements.OwnsJob(placed->job_id));
//   ... after a restart:
//   absl::StatusOr<Placement*> again = placements.ForProcess(stored);
//   placements.ReleaseUnused({/* what still runs */});
//
// Local placement is one stateless object. Slurm placements are one per
// allocation: an allocation the spec names (job_id) is borrowed; otherwise
// the daemon creates one with salloc the first time a spec asks for it and
// reuses it for every spec that asks for the same allocation (the same
// AllocationKey). Thread-safe.
#ifndef SERVELAB_DAEMON_PLACEMENT_PLACEMENT_SET_H_
#define SERVELAB_DAEMON_PLACEMENT_PLACEMENT_SET_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/placement/local_placement.h"
#include "daemon/placement/placement.h"
#include "daemon/placement/slurm_placement.h"
#include "servelab/v1/experiment.pb.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::placement {

// The environment variable every instance is started with, naming its
// owner (PlacementSetOptions.owner).
inline constexpr char kOwnerVariable[] = "SERVELAB_OWNER";

struct PlacementSetOptions {
  // Identifies this daemon's instances (its state directory): each gets
  // SERVELAB_OWNER=owner, so that one started but never recorded (a crash
  // in between) is found and stopped after a restart. Empty: no marker.
  std::string owner;
  // Environment of every Slurm command and step (SLURM_CONF, PATH).
  std::map<std::string, std::string> slurm_env;
  absl::Duration allocation_timeout = absl::Minutes(5);
  absl::Duration step_start_timeout = absl::Seconds(60);
};

// What identifies the allocation a spec without job_id asks for.
std::string AllocationKey(const v1::SlurmPlacementSpec& spec);

// The SlurmOptions for `spec` (job_id, partition, account, nodes, gres,
// time limit, step sharing) on top of `options`.
SlurmOptions SlurmOptionsFor(const v1::SlurmPlacementSpec& spec,
                             const PlacementSetOptions& options);

v1::PlacedProcess ToProto(const PlacedProcess& placed);
PlacedProcess FromProto(const v1::PlacedProcess& placed, int pid, int64_t start_ticks);

class PlacementSet {
 public:
  explicit PlacementSet(PlacementSetOptions options) : options_(std::move(options)) {}

  // The placement that launches under `spec`. Creating an allocation can
  // take up to allocation_timeout; errors as SlurmPlacement::Create.
  absl::StatusOr<Placement*> ForSpec(const v1::PlacementSpec& spec);

  // The placement of a stored process. For a Slurm step whose allocation this
  // daemon does not hold yet (it restarted), re-adopts the job.
  // FAILED_PRECONDITION when the job no longer runs: the process is gone.
  // UNAVAILABLE when Slurm cannot be asked.
  absl::StatusOr<Placement*> ForProcess(const v1::PlacedProcess& placed);

  const std::string& owner() const { return options_.owner; }

  // Stops every local session leader marked with this owner whose pid is
  // not in `recorded` (the instances' and their srun's pids); returns them.
  std::vector<int> StopUnrecorded(const std::vector<int>& recorded, absl::Duration grace);

  // Stamps what the daemon must store beside the identity: whether it
  // created the job, and the allocation key.
  void Annotate(v1::PlacedProcess& placed);

  // Ends every allocation this daemon created that no process in `kept`
  // runs in; returns the ended job ids.
  absl::StatusOr<std::vector<std::string>> ReleaseUnused(
      const std::vector<v1::PlacedProcess>& kept);

 private:
  struct Allocation {
    std::unique_ptr<SlurmPlacement> slurm;
    std::string key;  // Empty for a borrowed job.
    // False when re-adopted from a stored process, whose options (step
    // sharing) are not known: the first spec that uses it sets them.
    bool options_from_spec = false;
  };

  absl::StatusOr<SlurmPlacement*> Adopt(const std::string& job_id, bool own_job,
                                        const std::string& key, const v1::SlurmPlacementSpec* spec)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PlacementSetOptions options_;
  LocalPlacement local_;
  absl::Mutex mu_;
  // By job id.
  std::map<std::string, Allocation> allocations_ ABSL_GUARDED_BY(mu_);
  // Replaced by one with a spec's options; kept because a caller may still
  // be using the pointer ForProcess returned.
  std::vector<std::unique_ptr<SlurmPlacement>> retired_ ABSL_GUARDED_BY(mu_);
};

}  // namespace servelab::placement

#endif  // SERVELAB_DAEMON_PLACEMENT_PLACEMENT_SET_H_
