#include "daemon/engines/sglang_renderer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/engines/flag_check.h"
#include "daemon/engines/render_common.h"
#include "daemon/engines/spec_template.h"

namespace servelab::engines {
namespace {

constexpr int kDefaultBootstrapPort = 8998;  // python/sglang/srt/server_args.py

void AddIfSet(std::vector<std::string>& argv, const char* flag, int value) {
  if (value > 0) argv.insert(argv.end(), {flag, absl::StrCat(value)});
}

std::string Python(const v1::ExperimentSpec& spec, const SglangOptions& options) {
  const std::string& python = spec.deployment().programs().python_binary();
  return python.empty() ? options.python_binary : python;
}

int BootstrapPort(const v1::ExperimentSpec& spec) {
  const int port = spec.deployment().kv_transfer().bootstrap_port();
  return port > 0 ? port : kDefaultBootstrapPort;
}

absl::StatusOr<core::LaunchCommand> RenderRouter(const v1::ExperimentSpec& spec,
                                                 const core::Endpoints& endpoints,
                                                 const std::string& log_dir,
                                                 const SglangOptions& options,
                                                 core::LaunchCommand command) {
  const v1::RouterSpec& router = spec.deployment().router();
  std::vector<std::string>& argv = command.argv;
  if (!router.command_argv().empty()) {
    SERVELAB_ASSIGN_OR_RETURN(
        argv, ExpandArgv(router.command_argv(), spec,
                         TemplateVariables(spec, v1::SIDE_ROUTER, command.port, endpoints, log_dir),
                         "deployment.router.command_argv"));
    argv.insert(argv.end(), router.extra_args().begin(), router.extra_args().end());
  } else {
    SERVELAB_ASSIGN_OR_RETURN(int prefill, UpstreamPort(spec, v1::SIDE_PREFILL, endpoints));
    SERVELAB_ASSIGN_OR_RETURN(int decode, UpstreamPort(spec, v1::SIDE_DECODE, endpoints));
    // sgl-router always opens a Prometheus listener, on 0.0.0.0:29000 unless
    // told otherwise (router_args.py): it gets the router's host and a port
    // beside the router's.
    SERVELAB_ASSIGN_OR_RETURN(const int metrics_port,
                              PortBeside(spec, v1::SIDE_ROUTER, endpoints, command.port, 1));
    // --prefill takes the URL and that prefill's bootstrap port
    // (sgl-router py_src/sglang_router/launch_router.py).
    argv = {Python(spec, options), "-m", "sglang_router.launch_router", "--pd-disaggregation",
            "--prefill", HostUrl(endpoints.prefill_host, prefill),
            absl::StrCat(BootstrapPort(spec)), "--decode", HostUrl(endpoints.decode_host, decode),
            "--host", ListenHost(spec), "--port", absl::StrCat(command.port), "--prometheus-host",
            ListenHost(spec), "--prometheus-port", absl::StrCat(metrics_port),
            // A retried request would count once, with the retries' time in
            // its latency: a failure is recorded as one instead.
            "--disable-retries"};
    argv.insert(argv.end(), router.extra_args().begin(), router.extra_args().end());
    SERVELAB_RETURN_IF_ERROR(CheckRenderedFlags("sglang router", spec, argv, 3));
  }
  command.env.insert(router.env().begin(), router.env().end());
  return command;
}

// SGLang's parallel layout rules (python/sglang/srt/server_args.py): the
// expert-parallel group lives inside the TP group.
absl::Status CheckParallel(const v1::InstanceSpec& is, int tp_size, const std::string& field) {
  const int ep = is.expert_parallel();
  if (ep > 1 && (ep > tp_size || tp_size % ep != 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field,
                     ".expert_parallel: SGLang's --ep-size must be <= and divide --tp-size (the "
                     "instance's device count) ",
                     tp_size, ", not ", ep));
  }
  const int dp = is.data_parallel();
  if (dp > 1 && tp_size % dp != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".data_parallel: DP attention needs --tp-size ", tp_size, " divisible by ", dp));
  }
  if (is.context_parallel() > 1) {
    return absl::InvalidArgumentError(
        field + ".context_parallel: not mapped for SGLang; pass its flags in extra_args");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<core::LaunchCommand> RenderSglang(const v1::ExperimentSpec& spec, v1::Side side,
                                                 const core::Endpoints& endpoints,
                                                 const std::string& log_dir,
                                                 const SglangOptions& options) {
  SERVELAB_ASSIGN_OR_RETURN(core::LaunchCommand command,
                            NewLaunchCommand(spec, side, endpoints, log_dir));
  if (side == v1::SIDE_ROUTER) return RenderRouter(spec, endpoints, log_dir, options, command);

  SERVELAB_ASSIGN_OR_RETURN(const v1::InstanceSpec* instance, InstanceSpecFor(spec, side));
  const v1::InstanceSpec& is = *instance;
  const std::string field = InstanceFieldPath(side);
  if (is.model().empty())
    return absl::InvalidArgumentError(field + ".model is required for SGLang");
  if (is.external_data_parallel()) {
    return absl::InvalidArgumentError(
        field + ".external_data_parallel: not rendered for SGLang (use DP attention)");
  }
  const int tp_size = is.devices_size() > 0
                          ? is.devices_size()
                          : std::max(1, is.tensor_parallel()) * std::max(1, is.data_parallel());
  SERVELAB_RETURN_IF_ERROR(CheckParallel(is, tp_size, field));
  const v1::KvTransferSpec& kv = spec.deployment().kv_transfer();
  const std::string backend = kv.backend().empty() ? "mooncake" : kv.backend();
  if (backend != "mooncake" && backend != "nixl") {
    return absl::InvalidArgumentError(absl::StrCat("deployment.kv_transfer.backend: \"", backend,
                                                   "\" is not an SGLang transfer backend "
                                                   "(mooncake, nixl)"));
  }

  std::vector<std::string>& argv = command.argv;
  argv = {Python(spec, options), "-m",       "sglang.launch_server",
          "--model-path",        is.model(), "--host",
          ListenHost(spec),      "--port",   absl::StrCat(command.port)};
  if (!is.served_model_name().empty()) {
    argv.insert(argv.end(), {"--served-model-name", is.served_model_name()});
  }
  argv.insert(argv.end(), {"--disaggregation-mode", side == v1::SIDE_PREFILL ? "prefill" : "decode",
                           "--disaggregation-transfer-backend", backend});
  if (!kv.ib_device().empty())
    argv.insert(argv.end(), {"--disaggregation-ib-device", kv.ib_device()});
  if (side == v1::SIDE_PREFILL) {
    argv.insert(argv.end(), {"--disaggregation-bootstrap-port", absl::StrCat(BootstrapPort(spec))});
  }
  argv.insert(argv.end(), {"--tp-size", absl::StrCat(tp_size)});
  if (is.data_parallel() > 1) {
    argv.insert(argv.end(),
                {"--dp-size", absl::StrCat(is.data_parallel()), "--enable-dp-attention"});
  }
  AddIfSet(argv, "--ep-size", is.expert_parallel() > 1 ? is.expert_parallel() : 0);
  AddIfSet(argv, "--chunked-prefill-size", is.max_num_batched_tokens());
  AddIfSet(argv, "--max-running-requests", is.max_num_seqs());
  AddIfSet(argv, "--context-length", is.max_model_len());
  if (is.gpu_memory_utilization() > 0) {
    argv.insert(argv.end(), {"--mem-fraction-static", absl::StrCat(is.gpu_memory_utilization())});
  }
  if (!is.quantization().empty()) argv.insert(argv.end(), {"--quantization", is.quantization()});
  if (!is.expert_layout().path().empty()) {
    // A static initial expert placement is only honoured by the static
    // dispatch algorithm.
    argv.insert(argv.end(), {"--init-expert-location", is.expert_layout().path(),
                             "--ep-dispatch-algorithm", "static"});
  }
  argv.insert(argv.end(), {"--enable-metrics", "--enable-cache-report"});
  argv.insert(argv.end(), is.extra_args().begin(), is.extra_args().end());
  command.served_model = is.served_model_name().empty() ? is.model() : is.served_model_name();

  if (!is.devices().empty()) command.env["CUDA_VISIBLE_DEVICES"] = JoinDevices(is);
  for (const auto& [name, value] : is.env()) command.env[name] = value;
  SERVELAB_RETURN_IF_ERROR(CheckRenderedFlags("sglang launch_server", spec, argv, 3));
  return command;
}

}  // namespace servelab::engines
