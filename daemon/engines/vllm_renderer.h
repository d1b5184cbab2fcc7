// Engines for ENGINE_VLLM (NVIDIA GPUs, NixlConnector KV transfer, vLLM's
// toy P/D proxy) and ENGINE_VLLM_ASCEND (Ascend NPUs through the vllm-ascend
// plugin, Mooncake KV transfer, vllm-ascend's load-balance proxy). Both run
// `vllm serve`; what differs is the platform part (vllm_platform.h).
//
// A prefill side with tensor_parallel 4, data_parallel 2 renders
//   VLLM serve MODEL --host 127.0.0.1 --port P [--served-model-name N]
//   --tensor-parallel-size 4 --data-parallel-size 2 [--enable-expert-parallel]
//   --max-num-batched-tokens B --max-num-seqs S --max-model-len L
//   [--gpu-memory-utilization F] [--quantization Q] [--additional-config JSON]
//   --enable-prompt-tokens-details --kv-transfer-config JSON EXTRA...
//   env: the device list, VLLM_SERVER_DEV_MODE=1, the platform's env, then
//   the spec's env.
// --enable-prompt-tokens-details is what makes vLLM report cached tokens
// per request (vllm/entrypoints/openai/cli_args.py); VLLM_SERVER_DEV_MODE=1
// is what registers POST /reset_prefix_cache (api_server.py).
//
// With external_data_parallel, each DP rank is its own `vllm serve`
// (--data-parallel-rank r --data-parallel-address 127.0.0.1
// --data-parallel-rpc-port RPC) with its share of the devices, as
// vllm-ascend's examples/external_online_dp/run_dp_template.sh does. With a
// fixed port P, rank r listens on P + r and RPC is P + DP; with port 0 every
// one of them is a free port picked at render.
//
// Router: deployment.router.command_argv (spec_template.h placeholders) if
// given; else PYTHON PROXY_SCRIPT with the upstreams, where PROXY_SCRIPT is
// programs.proxy_script or the daemon's flag (vLLM installs no proxy binary).
//
// Every rendered argv is checked against the flag table of
// deployment.engine_version (flag_check.h). INVALID_ARGUMENT naming the
// field for what vLLM cannot express. Thread-safe.
#ifndef SERVELAB_DAEMON_ENGINES_VLLM_RENDERER_H_
#define SERVELAB_DAEMON_ENGINES_VLLM_RENDERER_H_

#include <string>

#include "absl/status/statusor.h"
#include "daemon/engines/process_engine.h"

namespace servelab::engines {

enum class VllmPlatform { kCuda, kAscend };

// servelabd's flags; a spec's deployment.programs overrides each.
struct VllmOptions {
  std::string vllm_binary = "/usr/local/bin/vllm";
  std::string python_binary = "/usr/bin/python3";
  // vLLM's tests/v1/kv_connector/nixl_integration/toy_proxy_server.py.
  std::string proxy_script;
  // vllm-ascend's examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py.
  std::string ascend_proxy_script;
};

absl::StatusOr<core::LaunchCommand> RenderVllm(const v1::ExperimentSpec& spec, v1::Side side,
                                               const core::Endpoints& endpoints,
                                               const std::string& log_dir,
                                               const VllmOptions& options, VllmPlatform platform);

class VllmEngine : public ProcessEngine {
 public:
  VllmEngine(VllmOptions options, VllmPlatform platform)
      : ProcessEngine(VllmProtocol()), options_(std::move(options)), platform_(platform) {}

  absl::StatusOr<core::LaunchCommand> Render(const v1::ExperimentSpec& spec, v1::Side side,
                                             const core::Endpoints& endpoints,
                                             const std::string& log_dir) override {
    return RenderVllm(spec, side, endpoints, log_dir, options_, platform_);
  }

 private:
  const VllmOptions options_;
  const VllmPlatform platform_;
};

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_VLLM_RENDERER_H_
