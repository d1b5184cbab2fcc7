// The stage table: every stage of an experiment, in execution order, with
// the worker that runs it, the side it launches, its phase and its body
// (docs/design.md §5). The planner, the stage runner and the failure
// classifier read these facts here instead of comparing enum ranges, so a new
// stage is one row.
//
//   for (const StageInfo& stage : StageTable()) {
//     if (stage.worker != Worker::kLane) continue;
//     ...
//   }
#ifndef SERVELAB_DAEMON_CORE_STAGE_TABLE_H_
#define SERVELAB_DAEMON_CORE_STAGE_TABLE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "daemon/core/stages.h"
#include "servelab/v1/experiment.pb.h"

namespace servelab::core {

// Who runs a stage. Freeze runs in the submit call itself; preflight and
// analysis run on the CPU worker, so the next experiment is prepared while
// the current one's load runs; the lane holds the accelerators.
enum class Worker { kSubmit, kCpu, kLane };

// What a failure in the stage means for the experiment (docs/design.md §7).
enum class StagePhase {
  kPrepare,  // Nothing formal sent yet.
  kLoad,     // The formal load.
  kDrain,    // Confirming the formal load ended.
  kAnalyze,  // Only stored records are read.
};

// A stage body the runner calls between RUNNING and SUCCEEDED/FAILED; null
// for the stages the runner drives itself (freeze at submit, the formal load
// with its progress, analyze and decide with their result).
using StageBody = absl::StatusOr<Counters> (*)(StageEnv& env, const v1::Experiment& e);

struct StageInfo {
  v1::StageName name;
  Worker worker;
  StagePhase phase;
  v1::Side launches;  // The side a launch stage starts; SIDE_UNSPECIFIED else.
  StageBody body;
};

// Every stage in execution order.
const std::vector<StageInfo>& StageTable();
// The row of `name`; the freeze row for a name the table does not hold.
const StageInfo& StageInfoOf(v1::StageName name);
// `a` comes after `b` in execution order.
bool RunsAfter(v1::StageName a, v1::StageName b);

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_STAGE_TABLE_H_
