#include "daemon/core/failure_class.h"

#include "absl/strings/str_cat.h"
#include "daemon/core/planner.h"

namespace servelab::core {

v1::FailureClass ClassifyFailure(v1::StageName failed, bool warm) {
  if (failed >= v1::STAGE_ANALYZE) return v1::ANALYSIS_FAILED;
  if (failed == v1::STAGE_DRAIN_CONFIRM) return v1::LOAD_END_UNKNOWN;
  if (failed == v1::STAGE_FORMAL_LOAD) return v1::LOAD_INTERRUPTED;
  // Before the formal load: a warm deployment is worth keeping.
  return warm && failed > v1::STAGE_WARMUP ? v1::WARM_RESUMABLE : v1::NO_REQUESTS_SENT;
}

std::string ResumeAction(v1::FailureClass failure_class, v1::StageName failed) {
  switch (failure_class) {
    case v1::NO_REQUESTS_SENT:
      return absl::StrCat("rerun from ", StageLabel(failed), "; no formal request was sent");
    case v1::WARM_RESUMABLE:
      return absl::StrCat("continue at ", StageLabel(failed),
                          " on the warm deployment: no relaunch, no re-warm");
    case v1::LOAD_INTERRUPTED:
      return "confirm the instances drained, then run a new formal attempt (earlier raw records "
             "are kept)";
    case v1::LOAD_END_UNKNOWN:
      return "the lane stays held until the instances drain; then a new formal attempt";
    case v1::ANALYSIS_FAILED:
      return "rerun analyze and decide on the stored raw records; no request is sent";
    default:
      return "";
  }
}

}  // namespace servelab::core
