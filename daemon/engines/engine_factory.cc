#include "daemon/engines/engine_factory.h"

#include "absl/strings/str_cat.h"
#include "daemon/engines/command_renderer.h"

namespace servelab::engines {

namespace {

std::unique_ptr<core::InstanceDriver> Placed(std::unique_ptr<ProcessEngine> engine,
                                             const EngineOptions& options) {
  if (options.placements != nullptr) engine->UsePlacements(options.placements);
  return engine;
}

}  // namespace

absl::StatusOr<std::unique_ptr<core::InstanceDriver>> MakeEngine(v1::Engine kind,
                                                                 const EngineOptions& options) {
  switch (kind) {
    case v1::ENGINE_SIM: {
      absl::StatusOr<std::unique_ptr<SimEngine>> sim = SimEngine::Create(options.sim);
      if (!sim.ok()) return sim.status();
      return Placed(*std::move(sim), options);
    }
    case v1::ENGINE_VLLM:
      return Placed(std::make_unique<VllmEngine>(options.vllm, VllmPlatform::kCuda), options);
    case v1::ENGINE_VLLM_ASCEND:
      return Placed(std::make_unique<VllmEngine>(options.vllm, VllmPlatform::kAscend), options);
    case v1::ENGINE_SGLANG:
      return Placed(std::make_unique<SglangEngine>(options.sglang), options);
    case v1::ENGINE_COMMAND:
      return Placed(std::make_unique<CommandEngine>(), options);
    default:
      return absl::InvalidArgumentError(absl::StrCat("deployment.engine: no engine for ",
                                                     v1::Engine_Name(kind),
                                                     " (sim, vllm, vllm_ascend, sglang, command)"));
  }
}

}  // namespace servelab::engines
