// Engine for ENGINE_SGLANG: PD-disaggregated sglang.launch_server
// instances behind sglang_router.
//
// Prefill (decode: --disaggregation-mode decode):
//   PYTHON -m sglang.launch_server --model-path MODEL --host 127.0.0.1 --port P
//   --disaggregation-mode prefill --disaggregation-transfer-backend BACKEND
//   --tp-size TP --dp-size DP --ep-size EP --chunked-prefill-size N
//   --max-running-requests S --context-length L --init-expert-location FILE
//   --enable-metrics EXTRA...     env: CUDA_VISIBLE_DEVICES, then the spec's env
// Router: deployment.router.command_argv if given, else
//   PYTHON -m sglang_router.launch_router --pd-disaggregation
//   --prefill http://127.0.0.1:P --decode http://127.0.0.1:D --host 127.0.0.1 --port R
// (the prefill's KV bootstrap port is SGLang's default on both ends).
// --enable-metrics is always passed: Scrape and drain_confirm need /metrics.
// INVALID_ARGUMENT for a missing model or context_parallel > 1 (not mapped).
// Thread-safe.
#ifndef SERVELAB_DAEMON_ENGINES_SGLANG_RENDERER_H_
#define SERVELAB_DAEMON_ENGINES_SGLANG_RENDERER_H_

#include <string>

#include "absl/status/statusor.h"
#include "daemon/engines/process_engine.h"

namespace servelab::engines {

struct SglangOptions {
  std::string python_binary = "/usr/bin/python3";
  // --disaggregation-transfer-backend: mooncake or nixl.
  std::string transfer_backend = "mooncake";
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
