// Engine for ENGINE_VLLM: a P/D deployment of `vllm serve` instances joined
// by NixlConnector KV transfer, behind a P/D proxy.
//
// Prefill (decode is the same with kv_consumer):
//   VLLM serve MODEL --host 127.0.0.1 --port P --tensor-parallel-size TP
//   --data-parallel-size DP [--enable-expert-parallel] [--prefill-context-parallel-size CP]
//   --max-num-batched-tokens N --max-num-seqs S --max-model-len L
//   --kv-transfer-config {"kv_connector":"NixlConnector","kv_role":"kv_producer"} EXTRA...
//   env: CUDA_VISIBLE_DEVICES=<devices>, VLLM_SERVER_DEV_MODE=1, then the spec's env.
// Unset (0) numeric fields are left to vLLM's defaults. VLLM_SERVER_DEV_MODE
// is what exposes POST /reset_prefix_cache, which cache_reset needs.
//
// Router: deployment.router.command_argv (spec_template.h placeholders) if
// given; else PYTHON PROXY_SCRIPT --host 127.0.0.1 --port R --prefiller-host
// 127.0.0.1 --prefiller-port P --decoder-host 127.0.0.1 --decoder-port D, where
// PROXY_SCRIPT is vLLM's example toy_proxy_server.py (vLLM installs no proxy
// binary, so its path is an option).
//
// INVALID_ARGUMENT (naming the field) for what vLLM cannot express:
// expert_parallel that is not TP x DP (vLLM derives the EP size), a static
// expert_layout file (no upstream flag; use ENGINE_COMMAND), a missing model.
// Thread-safe.
#ifndef SERVELAB_DAEMON_ENGINES_VLLM_RENDERER_H_
#define SERVELAB_DAEMON_ENGINES_VLLM_RENDERER_H_

#include <string>

#include "absl/status/statusor.h"
#include "daemon/engines/process_engine.h"

namespace servelab::engines {

struct VllmOptions {
  std::string vllm_binary = "/usr/local/bin/vllm";
  std::string python_binary = "/usr/bin/python3";
  // vLLM's P/D example proxy; empty: the router needs router.command_argv.
  std::string proxy_script;
};

absl::StatusOr<core::LaunchCommand> RenderVllm(const v1::ExperimentSpec& spec, v1::Side side,
                                               const core::Endpoints& endpoints,
                                               const std::string& log_dir,
                                               const VllmOptions& options);

class VllmEngine : public ProcessEngine {
 public:
  explicit VllmEngine(VllmOptions options)
      : ProcessEngine(VllmProtocol()), options_(std::move(options)) {}

  absl::StatusOr<core::LaunchCommand> Render(const v1::ExperimentSpec& spec, v1::Side side,
                                             const core::Endpoints& endpoints,
                                             const std::string& log_dir) override {
    return RenderVllm(spec, side, endpoints, log_dir, options_);
  }

 private:
  const VllmOptions options_;
};

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_VLLM_RENDERER_H_
