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

absl::StatusOr<v1::HotDeployment> DescribeHotDeployment(Store& store) {
  v1::HotDeployment hot;
  SERVELAB_ASSIGN_OR_RETURN(std::optional<HotDeployment> running, ReadHotDeployment(store));
  if (!running.has_value()) return hot;
  hot.set_experiment_id(running->experiment_id);
  *hot.mutable_fingerprints() = running->fingerprints;
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::ServingInstance> instances, store.ListInstances());
  for (v1::ServingInstance& instance : instances) {
    if (instance.has_warm_since()) *hot.mutable_warm_since() = instance.warm_since();
    instance.clear_command_text();  // In the launch stage; too long for a summary.
    *hot.add_instances() = std::move(instance);
  }
  return hot;
}

}  // namespace servelab::core
