#include "daemon/engines/vllm_renderer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "daemon/engines/render_common.h"
#include "daemon/engines/spec_template.h"

namespace servelab::engines {
namespace {

void AddIfSet(std::vector<std::string>& argv, const char* flag, int value) {
  if (value > 0) argv.insert(argv.end(), {flag, absl::StrCat(value)});
}

absl::StatusOr<core::LaunchCommand> RenderRouter(const v1::ExperimentSpec& spec,
                                                 const core::Endpoints& endpoints,
                                                 const std::string& log_dir,
                                                 const VllmOptions& options,
                                                 core::LaunchCommand command) {
  const v1::RouterSpec& router = spec.deployment().router();
  std::map<std::string, std::string> vars =
      TemplateVariables(spec, v1::SIDE_ROUTER, command.port, endpoints, log_dir);
  if (!router.command_argv().empty()) {
    absl::StatusOr<std::vector<std::string>> argv =
        ExpandArgv(router.command_argv(), spec, vars, "deployment.router.command_argv");
    if (!argv.ok()) return argv.status();
    command.argv = *std::move(argv);
  } else {
    if (options.proxy_script.empty()) {
      return absl::InvalidArgumentError(
          "deployment.router.command_argv: vLLM installs no P/D proxy binary; give the proxy's "
          "argv here (placeholders {port} {prefill_port} {decode_port}) or start the daemon with "
          "the path of vLLM's toy_proxy_server.py");
    }
    absl::StatusOr<int> prefill = UpstreamPort(spec, v1::SIDE_PREFILL, endpoints);
    if (!prefill.ok()) return prefill.status();
    absl::StatusOr<int> decode = UpstreamPort(spec, v1::SIDE_DECODE, endpoints);
    if (!decode.ok()) return decode.status();
    command.argv = {options.python_binary, options.proxy_script,
                    "--host",              "127.0.0.1",
                    "--port",              absl::StrCat(command.port),
                    "--prefiller-host",    "127.0.0.1",
                    "--prefiller-port",    absl::StrCat(*prefill),
                    "--decoder-host",      "127.0.0.1",
                    "--decoder-port",      absl::StrCat(*decode)};
  }
  command.argv.insert(command.argv.end(), router.extra_args().begin(), router.extra_args().end());
  command.env.insert(router.env().begin(), router.env().end());
  return command;
}

}  // namespace

absl::StatusOr<core::LaunchCommand> RenderVllm(const v1::ExperimentSpec& spec, v1::Side side,
                                               const core::Endpoints& endpoints,
                                               const std::string& log_dir,
                                               const VllmOptions& options) {
  absl::StatusOr<core::LaunchCommand> started = NewLaunchCommand(spec, side, endpoints, log_dir);
  if (!started.ok()) return started.status();
  core::LaunchCommand command = *std::move(started);
  if (side == v1::SIDE_ROUTER) return RenderRouter(spec, endpoints, log_dir, options, command);

  absl::StatusOr<const v1::InstanceSpec*> instance = InstanceSpecFor(spec, side);
  if (!instance.ok()) return instance.status();
  const v1::InstanceSpec& is = **instance;
  const std::string field = InstanceFieldPath(side);
  if (is.model().empty()) return absl::InvalidArgumentError(field + ".model is required for vLLM");
  const int tp = std::max(1, is.tensor_parallel()), dp = std::max(1, is.data_parallel());
  if (is.expert_parallel() > 1 && is.expert_parallel() != tp * dp) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".expert_parallel: vLLM's expert-parallel size is tensor_parallel x data_parallel = ",
        tp * dp, ", not ", is.expert_parallel()));
  }
  if (!is.expert_layout().path().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".expert_layout: stock vLLM has no flag for a static expert layout file; use "
               "engine command with a {", field, ".expert_layout.path} placeholder"));
  }

  std::vector<std::string>& argv = command.argv;
  argv = {options.vllm_binary, "serve", is.model(), "--host", "127.0.0.1", "--port",
          absl::StrCat(command.port)};
  AddIfSet(argv, "--tensor-parallel-size", is.tensor_parallel());
  AddIfSet(argv, "--data-parallel-size", is.data_parallel());
  if (is.expert_parallel() > 1) argv.push_back("--enable-expert-parallel");
  if (is.context_parallel() > 1) {
    AddIfSet(argv,
             side == v1::SIDE_PREFILL ? "--prefill-context-parallel-size"
                                      : "--decode-context-parallel-size",
             is.context_parallel());
  }
  AddIfSet(argv, "--max-num-batched-tokens", is.max_num_batched_tokens());
  AddIfSet(argv, "--max-num-seqs", is.max_num_seqs());
  AddIfSet(argv, "--max-model-len", is.max_model_len());
  argv.insert(argv.end(),
              {"--kv-transfer-config",
               absl::StrCat(R"({"kv_connector":"NixlConnector","kv_role":")",
                            side == v1::SIDE_PREFILL ? "kv_producer" : "kv_consumer", R"("})")});
  argv.insert(argv.end(), is.extra_args().begin(), is.extra_args().end());

  if (!is.devices().empty()) command.env["CUDA_VISIBLE_DEVICES"] = JoinDevices(is);
  command.env["VLLM_SERVER_DEV_MODE"] = "1";
  for (const auto& [name, value] : is.env()) command.env[name] = value;
  return command;
}

}  // namespace servelab::engines
