// StageRunner::Release: giving the devices back (docs/design.md §6
// "Release"). It goes through the lane, like every launch and stop, so it
// can never stop instances under a running load.
#include "absl/strings/str_cat.h"
#include "common/labels.h"
#include "common/status_macros.h"
#include "daemon/core/hot_deployment.h"
#include "daemon/core/stage_runner.h"

namespace servelab::core {
namespace {

// The router goes first: it is the only client of the other two.
constexpr v1::Side kStopOrder[] = {v1::SIDE_ROUTER, v1::SIDE_DECODE, v1::SIDE_PREFILL};

}  // namespace

absl::StatusOr<v1::ReleaseDeploymentResponse> StageRunner::Release(v1::Side side) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("servelabd is shutting down");
    if (!latched_error_.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "servelabd writes nothing since ", latched_error_.message(), "; nothing was stopped"));
    }
    if (releasing_) return absl::FailedPreconditionError("a release is already running");
    // A drain hold is the one owner a release may cut short: stopped
    // processes hold no request, so the hold ends as confirmed.
    if (!lane_.owner.empty() && !lane_.holding_for_drain) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the accelerator lane is held by ", lane_.owner, " (", StageLabel(lane_.stage),
          "); release once it is final, or cancel it first. Nothing was stopped"));
    }
    releasing_ = true;
  }
  absl::StatusOr<v1::ReleaseDeploymentResponse> response = StopInstances(side);
  absl::MutexLock lock(&mu_);
  releasing_ = false;
  lane_released_ = ledger_.clock().Now();
  return response;
}

absl::StatusOr<v1::ReleaseDeploymentResponse> StageRunner::StopInstances(v1::Side side) {
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::ServingInstance> instances,
                            ledger_.store().ListInstances());
  v1::ReleaseDeploymentResponse response;
  for (v1::Side candidate : kStopOrder) {
    if (side != v1::SIDE_UNSPECIFIED && side != candidate) continue;
    for (const v1::ServingInstance& instance : instances) {
      if (instance.side() != candidate) continue;
      SERVELAB_RETURN_IF_ERROR(instances_.Stop(instance, options_.stop_grace));
      SERVELAB_RETURN_IF_ERROR(ledger_.store().RemoveInstance(candidate));
      v1::ServingInstance& released = *response.add_released();
      released = instance;
      released.clear_command_text();
      // The experiment that launched it keeps the fact in its event log.
      Record(instance.experiment_id(), [&](v1::Experiment&) -> absl::StatusOr<EventText> {
        return EventText{"released",
                         absl::StrCat(SideLabel(candidate), " (", InstancePlace(instance),
                                      ") stopped by a release; its devices are free")};
      });
    }
  }
  // An allocation the daemon created ends with the last instance in it.
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::ServingInstance> kept, ledger_.store().ListInstances());
  SERVELAB_ASSIGN_OR_RETURN(std::vector<std::string> ended,
                            instances_.ReleaseUnusedPlacements(kept));
  for (const std::string& allocation : ended) response.add_ended_allocations(allocation);
  SERVELAB_ASSIGN_OR_RETURN(*response.mutable_hot_deployment(),
                            DescribeHotDeployment(ledger_.store()));
  return response;
}

}  // namespace servelab::core
