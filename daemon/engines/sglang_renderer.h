// Engine for ENGINE_SGLANG: PD-disaggregated sglang.launch_server
// instances behind sglang_router.
//
// Prefill (decode: --disaggregation-mode decode, no bootstrap port):
//   PYTHON -m sglang.launch_server --model-path MODEL --host 127.0.0.1 --port P
//   [--served-model-name N] --disaggregation-mode prefill
//   --disaggregation-transfer-backend mooncake|nixl [--disaggregation-ib-device IB]
//   --disaggregation-bootstrap-port BP --tp-size DEVICES [--dp-size DP
//   --enable-dp-attention] [--ep-size EP] --chunked-prefill-size N
//   --max-running-requests S --context-length L [--mem-fraction-static F]
//   [--quantization Q] [--init-expert-location FILE --ep-dispatch-algorithm static]
//   --enable-metrics --enable-cache-report EXTRA...
//   env: CUDA_VISIBLE_DEVICES, then the spec's env.
// SGLang's --tp-size is the instance's device count; data parallel inside an
// instance is DP attention (python/sglang/srt/server_args.py). --enable-metrics
// is what serves /metrics (Scrape, drain); --enable-cache-report is what puts
// cached_tokens in usage.
// Router: deployment.router.command_argv if given, else
//   PYTHON -m sglang_router.launch_router --pd-disaggregation
//   --prefill http://127.0.0.1:P BP --decode http://127.0.0.1:D --host 127.0.0.1 --port R
// Every rendered argv is checked against the flag table of
// deployment.engine_version (flag_check.h). INVALID_ARGUMENT naming the field
// for a missing model, context_parallel > 1 (not mapped), or an ep_size that
// does not divide tp_size. Thread-safe.
#ifndef SERVELAB_DAEMON_ENGINES_SGLANG_RENDERER_H_
#define SERVELAB_DAEMON_ENGINES_SGLANG_RENDERER_H_

#include <string>

#include "absl/status/statusor.h"
#include "daemon/engines/process_engine.h"

namespace servelab::engines {

// servelabd's flags; deployment.programs.python_binary overrides.
struct SglangOptions {
  std::string python_binary = "/usr/bin/python3";
};

absl::StatusOr<core::LaunchCommand> RenderSglang(const v1::ExperimentSpec& spec, v1::Side side,
                                                 const core::Endpoints& endpoints,
                                                 const std::string& log_dir,
                                                 const SglangOptions& options);

class SglangEngine : public ProcessEngine {
 public:
  explicit SglangEngine(SglangOptions options)
      : ProcessEngine(SglangProtocol()), options_(std::move(options)) {}

  absl::StatusOr<core::LaunchCommand> Render(const v1::ExperimentSpec& spec, v1::Side side,
                                             const core::Endpoints& endpoints,
                                             const std::string& log_dir) override {
    return RenderSglang(spec, side, endpoints, log_dir, options_);
  }

 private:
  const SglangOptions options_;
};

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_SGLANG_RENDERER_H_
