#include "common/labels.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace servelab {
namespace {

// Every label is the enum value's name less its prefix, lower-cased; an
// unknown number (a newer peer's value) reads "unknown", never "".
std::string Label(const std::string& name, absl::string_view prefix) {
  absl::string_view view = name;
  if (view.empty() || !absl::ConsumePrefix(&view, prefix)) return "unknown";
  return absl::AsciiStrToLower(view);
}

}  // namespace

std::string StateLabel(v1::ExperimentState state) {
  return Label(v1::ExperimentState_Name(state), "EXPERIMENT_STATE_");
}

std::string StageLabel(v1::StageName stage) { return Label(v1::StageName_Name(stage), "STAGE_"); }

std::string ActionLabel(v1::StageAction action) {
  return Label(v1::StageAction_Name(action), "STAGE_ACTION_");
}

std::string StageStatusLabel(v1::StageStatus status) {
  return Label(v1::StageStatus_Name(status), "STAGE_STATUS_");
}

std::string SideLabel(v1::Side side) { return Label(v1::Side_Name(side), "SIDE_"); }

std::string PhaseLabel(v1::Phase phase) { return Label(v1::Phase_Name(phase), "PHASE_"); }

std::string VerdictLabel(v1::Verdict verdict) {
  return Label(v1::Verdict_Name(verdict), "VERDICT_");
}

bool IsFinal(v1::ExperimentState state) {
  return state == v1::EXPERIMENT_STATE_SUCCEEDED || state == v1::EXPERIMENT_STATE_FAILED ||
         state == v1::EXPERIMENT_STATE_CANCELLED;
}

std::string InstancePlace(const v1::ServingInstance& instance) {
  const v1::PlacedProcess& placed = instance.placed();
  if (placed.kind() == v1::PLACEMENT_KIND_SLURM) {
    return absl::StrCat("Slurm step ", placed.step_id(), " on node ", placed.node());
  }
  return absl::StrCat("pid ", instance.pid());
}

}  // namespace servelab
