#include "daemon/engines/engine_factory.h"

#include "absl/strings/str_cat.h"
#include "daemon/engines/command_renderer.h"

namespace servelab::engines {

absl::StatusOr<std::unique_ptr<core::InstanceDriver>> MakeEngine(v1::Engine kind,
                                                                 const EngineOptions& options) {
  switch (kind) {
    case v1::ENGINE_SIM: {
      absl::StatusOr<std::unique_ptr<SimEngine>> sim = SimEngine::Create(options.sim);
      if (!sim.ok()) return sim.status();
      return std::unique_ptr<core::InstanceDriver>(*std::move(sim));
    }
    case v1::ENGINE_VLLM:
      return std::unique_ptr<core::InstanceDriver>(
          std::make_unique<VllmEngine>(options.vllm, VllmPlatform::kCuda));
    case v1::ENGINE_VLLM_ASCEND:
      return std::unique_ptr<core::InstanceDriver>(
          std::make_unique<VllmEngine>(options.vllm, VllmPlatform::kAscend));
    case v1::ENGINE_SGLANG:
      return std::unique_ptr<core::InstanceDriver>(std::make_unique<SglangEngine>(options.sglang));
    case v1::ENGINE_COMMAND:
      return std::unique_ptr<core::InstanceDriver>(std::make_unique<CommandEngine>());
    default:
      return absl::InvalidArgumentError(absl::StrCat("deployment.engine: no engine for ",
                                                     v1::Engine_Name(kind),
                                                     " (sim, vllm, vllm_ascend, sglang, command)"));
  }
}

}  // namespace servelab::engines
