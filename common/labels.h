// The one text form of each proto enum value, for the CLI, event details,
// stage messages and metric labels alike (docs/design.md §14): the value's
// name without its enum prefix, lower case — "succeeded", "formal_load",
// "reuse", "prefill". JSON output keeps the proto names (EXPERIMENT_STATE_*),
// which is the wire form, and failure classes keep theirs
// (LOAD_INTERRUPTED): they are read as codes.
//
//   absl::StrCat(StageLabel(v1::STAGE_FORMAL_LOAD), " ", StateLabel(e.state()))
//   // "formal_load running"
#ifndef SERVELAB_COMMON_LABELS_H_
#define SERVELAB_COMMON_LABELS_H_

#include <string>

#include "servelab/v1/experiment.pb.h"
#include "servelab/v1/result.pb.h"

namespace servelab {

std::string StateLabel(v1::ExperimentState state);
std::string StageLabel(v1::StageName stage);
std::string ActionLabel(v1::StageAction action);
std::string StageStatusLabel(v1::StageStatus status);
std::string SideLabel(v1::Side side);
// "warmup" for PHASE_WARMUP: also the middle part of a load tag (exp-3/warmup/1).
std::string PhaseLabel(v1::Phase phase);
// "keep" for VERDICT_KEEP.
std::string VerdictLabel(v1::Verdict verdict);
// Where an instance runs: "pid 4242", or "Slurm step 42.3 on node n1".
std::string InstancePlace(const v1::ServingInstance& instance);

// SUCCEEDED, FAILED or CANCELLED: nothing more will happen without a resume.
bool IsFinal(v1::ExperimentState state);

}  // namespace servelab

#endif  // SERVELAB_COMMON_LABELS_H_
