#include "daemon/core/hot_deployment.h"

#include "common/status_macros.h"

namespace servelab::core {

const std::string& FingerprintOf(const v1::Fingerprints& f, v1::Side side) {
  return side == v1::SIDE_PREFILL ? f.prefill() : side == v1::SIDE_DECODE ? f.decode() : f.router();
}

absl::StatusOr<std::optional<HotDeployment>> ReadHotDeployment(Store& store) {
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::ServingInstance> instances, store.ListInstances());
  if (instances.empty()) return std::optional<HotDeployment>();
  HotDeployment hot{.warm = true};
  for (const v1::ServingInstance& instance : instances) {
    // The router is launched last: its experiment is the deployment's.
    if (hot.experiment_id.empty() || instance.side() == v1::SIDE_ROUTER) {
      hot.experiment_id = instance.experiment_id();
    }
    hot.warm = hot.warm && instance.has_warm_since();
    switch (instance.side()) {
      case v1::SIDE_PREFILL:
        hot.fingerprints.set_prefill(instance.fingerprint());
        break;
      case v1::SIDE_DECODE:
        hot.fingerprints.set_decode(instance.fingerprint());
        break;
      case v1::SIDE_ROUTER:
        hot.fingerprints.set_router(instance.fingerprint());
        break;
      default:
        break;
    }
  }
  // Warmup is remembered by the experiment whose warmup ran last; reused
  // warmups keep the launching experiment's fingerprint, which is equal.
  absl::StatusOr<v1::Experiment> owner = store.GetExperiment(hot.experiment_id);
  if (owner.ok()) hot.fingerprints.set_warmup(owner->plan().fingerprints().warmup());
  return std::optional<HotDeployment>(hot);
}

}  // namespace servelab::core
