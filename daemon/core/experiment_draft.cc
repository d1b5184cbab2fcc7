#include "daemon/core/experiment_draft.h"

#include "absl/strings/str_cat.h"
#include "daemon/core/ledger.h"
#include "daemon/core/spec/spec_delta.h"

namespace servelab::core {

absl::Status ApplyDelta(v1::ExperimentSpec& spec,
                        const google::protobuf::RepeatedPtrField<std::string>& unset,
                        const google::protobuf::RepeatedPtrField<std::string>& set) {
  for (const std::string& path : unset) {
    absl::Status status = spec::ApplyUnset(spec, path);
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat("unset \"", path, "\": ", status.message()));
    }
  }
  for (const std::string& assignment : set) {
    absl::Status status = spec::ApplySet(spec, assignment);
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat("set \"", assignment, "\": ", status.message()));
    }
  }
  return absl::OkStatus();
}

void AddStageRows(v1::Experiment& experiment, absl::Time received, absl::Time frozen_at) {
  for (const v1::PlannedStage& planned : experiment.plan().stages()) {
    v1::Stage& stage = *experiment.add_stages();
    stage.set_name(planned.stage());
    stage.set_action(planned.action());
    stage.set_reason(planned.reason());
    stage.set_attempt(planned.stage() == v1::STAGE_FREEZE ? 1 : 0);
    stage.set_status(v1::STAGE_STATUS_PENDING);
    if (planned.stage() == v1::STAGE_FREEZE) {
      stage.set_status(v1::STAGE_STATUS_SUCCEEDED);
      *stage.mutable_started_at() = ToTimestamp(received);
      *stage.mutable_ended_at() = ToTimestamp(frozen_at);
    }
  }
}

}  // namespace servelab::core
