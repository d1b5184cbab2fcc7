#include "daemon/engines/sglang_renderer.h"

#include "absl/strings/str_cat.h"
#include "daemon/engines/render_common.h"
#include "daemon/engines/spec_template.h"

namespace servelab::engines {
namespace {

void AddIfSet(std::vector<std::string>& argv, const char* flag, int value) {
  if (value > 0) argv.insert(argv.end(), {flag, absl::StrCat(value)});
}

}  // namespace

absl::StatusOr<core::LaunchCommand> RenderSglang(const v1::ExperimentSpec& spec, v1::Side side,
                                                 const core::Endpoints& endpoints,
                                                 const std::string& log_dir,
                                                 const SglangOptions& options) {
  absl::StatusOr<core::LaunchCommand> started = NewLaunchCommand(spec, side, endpoints, log_dir);
  if (!started.ok()) return started.status();
  core::LaunchCommand command = *std::move(started);
  std::vector<std::string>& argv = command.argv;

  if (side == v1::SIDE_ROUTER) {
    const v1::RouterSpec& router = spec.deployment().router();
    if (!router.command_argv().empty()) {
      absl::StatusOr<std::vector<std::string>> expanded = ExpandArgv(
          router.command_argv(), spec,
          TemplateVariables(spec, side, command.port, endpoints, log_dir), "deployment.router.command_argv");
      if (!expanded.ok()) return expanded.status();
      argv = *std::move(expanded);
    } else {
      absl::StatusOr<int> prefill = UpstreamPort(spec, v1::SIDE_PREFILL, endpoints);
      if (!prefill.ok()) return prefill.status();
      absl::StatusOr<int> decode = UpstreamPort(spec, v1::SIDE_DECODE, endpoints);
      if (!decode.ok()) return decode.status();
      argv = {options.python_binary, "-m",       "sglang_router.launch_router",
              "--pd-disaggregation", "--prefill", LoopbackUrl(*prefill),
              "--decode",            LoopbackUrl(*decode), "--host",
              "127.0.0.1",           "--port",   absl::StrCat(command.port)};
    }
    argv.insert(argv.end(), router.extra_args().begin(), router.extra_args().end());
    command.env.insert(router.env().begin(), router.env().end());
    return command;
  }

  absl::StatusOr<const v1::InstanceSpec*> instance = InstanceSpecFor(spec, side);
  if (!instance.ok()) return instance.status();
  const v1::InstanceSpec& is = **instance;
  const std::string field = InstanceFieldPath(side);
  if (is.model().empty()) return absl::InvalidArgumentError(field + ".model is required for SGLang");
  if (is.context_parallel() > 1) {
    return absl::InvalidArgumentError(
        field + ".context_parallel: not mapped for SGLang; pass its flags in extra_args");
  }
  argv = {options.python_binary,
          "-m",
          "sglang.launch_server",
          "--model-path",
          is.model(),
          "--host",
          "127.0.0.1",
          "--port",
          absl::StrCat(command.port),
          "--disaggregation-mode",
          side == v1::SIDE_PREFILL ? "prefill" : "decode",
          "--disaggregation-transfer-backend",
          options.transfer_backend};
  AddIfSet(argv, "--tp-size", is.tensor_parallel());
  AddIfSet(argv, "--dp-size", is.data_parallel());
  AddIfSet(argv, "--ep-size", is.expert_parallel() > 1 ? is.expert_parallel() : 0);
  AddIfSet(argv, "--chunked-prefill-size", is.max_num_batched_tokens());
  AddIfSet(argv, "--max-running-requests", is.max_num_seqs());
  AddIfSet(argv, "--context-length", is.max_model_len());
  if (!is.expert_layout().path().empty()) {
    argv.insert(argv.end(), {"--init-expert-location", is.expert_layout().path()});
  }
  argv.push_back("--enable-metrics");
  argv.insert(argv.end(), is.extra_args().begin(), is.extra_args().end());

  if (!is.devices().empty()) command.env["CUDA_VISIBLE_DEVICES"] = JoinDevices(is);
  for (const auto& [name, value] : is.env()) command.env[name] = value;
  return command;
}

}  // namespace servelab::engines
