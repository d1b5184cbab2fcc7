// Engine for ENGINE_COMMAND: each side's argv is a template from the spec
// (deployment.prefill.command_argv, deployment.decode.command_argv,
// deployment.router.command_argv) with `{placeholders}` (spec_template.h),
// e.g.
//   ["/opt/serve/bin/serve", "--model", "{deployment.decode.model}",
//    "--port", "{port}", "--layout", "{deployment.decode.expert_layout.path}"]
// extra_args are expanded and appended; env values are expanded too;
// CUDA_VISIBLE_DEVICES is set from devices unless the spec's env sets it.
// The instances are probed like vLLM (/health, /metrics with vllm: names,
// POST /reset_prefix_cache). Thread-safe.
#ifndef SERVELAB_DAEMON_ENGINES_COMMAND_RENDERER_H_
#define SERVELAB_DAEMON_ENGINES_COMMAND_RENDERER_H_

#include <string>

#include "absl/status/statusor.h"
#include "daemon/engines/process_engine.h"

namespace servelab::engines {

absl::StatusOr<core::LaunchCommand> RenderCommand(const v1::ExperimentSpec& spec, v1::Side side,
                                                  const core::Endpoints& endpoints,
                                                  const std::string& log_dir);

class CommandEngine : public ProcessEngine {
 public:
  CommandEngine() : ProcessEngine(VllmProtocol()) {}

  absl::StatusOr<core::LaunchCommand> Render(const v1::ExperimentSpec& spec, v1::Side side,
                                             const core::Endpoints& endpoints,
                                             const std::string& log_dir) override {
    return RenderCommand(spec, side, endpoints, log_dir);
  }
};

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_COMMAND_RENDERER_H_
