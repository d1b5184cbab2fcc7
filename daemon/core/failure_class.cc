#include "daemon/core/failure_class.h"

#include "absl/strings/str_cat.h"
#include "common/labels.h"
#include "daemon/core/stage_table.h"

namespace servelab::core {

v1::FailureClass ClassifyFailure(v1::StageName failed, bool warm) {
  switch (StageInfoOf(failed).phase) {
    case StagePhase::kAnalyze:
      return v1::ANALYSIS_FAILED;
    case StagePhase::kDrain:
      return v1::LOAD_END_UNKNOWN;
    case StagePhase::kLoad:
      return v1::LOAD_INTERRUPTED;
    case StagePhase::kPrepare:
      break;
  }
  // Before the formal load: a warm deployment is worth keeping.
  return warm && RunsAfter(failed, v1::STAGE_WARMUP) ? v1::WARM_RESUMABLE : v1::NO_REQUESTS_SENT;
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
      return "the lane stays held until the instances drain (or `servelab release` stops them); "
             "then the drain is confirmed and the stored formal load analyzed (a load that did "
             "not finish gets a new attempt)";
    case v1::ANALYSIS_FAILED:
      return "rerun analyze and decide on the stored raw records; no request is sent";
    default:
      return "";
  }
}

}  // namespace servelab::core
