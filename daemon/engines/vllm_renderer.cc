#include "daemon/engines/vllm_renderer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "daemon/engines/flag_check.h"
#include "daemon/engines/render_common.h"
#include "daemon/engines/spec_template.h"
#include "daemon/engines/vllm_platform.h"

namespace servelab::engines {
namespace {

void AddIfSet(std::vector<std::string>& argv, const char* flag, int value) {
  if (value > 0) argv.insert(argv.end(), {flag, absl::StrCat(value)});
}

absl::StatusOr<core::LaunchCommand> RenderRouter(const v1::ExperimentSpec& spec,
                                                 const core::Endpoints& endpoints,
                                                 const std::string& log_dir,
                                                 const VllmOptions& options, VllmPlatform platform,
                                                 core::LaunchCommand command) {
  const v1::RouterSpec& router = spec.deployment().router();
  if (!router.command_argv().empty()) {
    std::map<std::string, std::string> vars =
        TemplateVariables(spec, v1::SIDE_ROUTER, command.port, endpoints, log_dir);
    SERVELAB_ASSIGN_OR_RETURN(command.argv, ExpandArgv(router.command_argv(), spec, vars,
                                                       "deployment.router.command_argv"));
    command.argv.insert(command.argv.end(), router.extra_args().begin(), router.extra_args().end());
  } else {
    std::string tool;
    SERVELAB_ASSIGN_OR_RETURN(command.argv,
                              ProxyArgv(spec, endpoints, command.port, options, platform, &tool));
    command.argv.insert(command.argv.end(), router.extra_args().begin(), router.extra_args().end());
    SERVELAB_RETURN_IF_ERROR(CheckRenderedFlags(tool, spec, command.argv, 2));
  }
  command.env.insert(router.env().begin(), router.env().end());
  return command;
}

// The devices of DP rank `rank` when each rank is its own process: the
// side's devices in equal consecutive shares.
absl::StatusOr<std::string> RankDevices(const v1::InstanceSpec& is, int rank, int ranks,
                                        const std::string& field) {
  if (is.devices().empty()) return std::string();
  if (is.devices_size() % ranks != 0) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".devices: ", is.devices_size(),
                                                   " devices do not split into ", ranks,
                                                   " external data-parallel ranks"));
  }
  const int share = is.devices_size() / ranks;
  return absl::StrJoin(is.devices().begin() + rank * share,
                       is.devices().begin() + (rank + 1) * share, ",");
}

struct ServeArgs {
  std::string binary;
  std::string additional_config;
  std::map<std::string, std::string> platform_env;
};

// argv and env of one `vllm serve` process (rank `rank` of `ranks`
// processes; ranks == 1 for the usual single process per side).
absl::Status RenderServe(const v1::ExperimentSpec& spec, v1::Side side, const ServeArgs& args,
                         VllmPlatform platform, int port, int rank, int ranks, int rpc_port,
                         std::vector<std::string>& argv, std::map<std::string, std::string>& env) {
  const v1::InstanceSpec& is = **InstanceSpecFor(spec, side);
  const std::string field = InstanceFieldPath(side);
  argv = {args.binary,      "serve",  is.model(),        "--host",
          ListenHost(spec), "--port", absl::StrCat(port)};
  if (!is.served_model_name().empty()) {
    argv.insert(argv.end(), {"--served-model-name", is.served_model_name()});
  }
  AddIfSet(argv, "--tensor-parallel-size", is.tensor_parallel());
  AddIfSet(argv, "--data-parallel-size", is.data_parallel());
  if (ranks > 1) {
    argv.insert(argv.end(), {"--data-parallel-rank", absl::StrCat(rank), "--data-parallel-address",
                             "127.0.0.1", "--data-parallel-rpc-port", absl::StrCat(rpc_port)});
  }
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
  if (is.gpu_memory_utilization() > 0) {
    argv.insert(argv.end(),
                {"--gpu-memory-utilization", absl::StrCat(is.gpu_memory_utilization())});
  }
  if (!is.quantization().empty()) argv.insert(argv.end(), {"--quantization", is.quantization()});
  if (!args.additional_config.empty()) {
    argv.insert(argv.end(), {"--additional-config", args.additional_config});
  }
  argv.push_back("--enable-prompt-tokens-details");
  SERVELAB_ASSIGN_OR_RETURN(const std::string kv_transfer_config,
                            KvTransferConfig(spec, side, platform, ranks > 1 ? rank : 0));
  argv.insert(argv.end(), {"--kv-transfer-config", kv_transfer_config});
  argv.insert(argv.end(), is.extra_args().begin(), is.extra_args().end());

  SERVELAB_ASSIGN_OR_RETURN(std::string devices,
                            ranks > 1 ? RankDevices(is, rank, ranks, field) : JoinDevices(is));
  if (!devices.empty()) env[DeviceVariable(platform)] = devices;
  // The Mooncake connector names its device npu_<id> from
  // PHYSICAL_DEVICES[data_parallel_rank_local * tp ...] (vllm-ascend envs.py,
  // mooncake_connector.py); without it every external rank, local rank 0,
  // would claim the side's first devices.
  if (platform == VllmPlatform::kAscend && ranks > 1 && !devices.empty()) {
    env["PHYSICAL_DEVICES"] = devices;
  }
  env["VLLM_SERVER_DEV_MODE"] = "1";
  env.insert(args.platform_env.begin(), args.platform_env.end());
  for (const auto& [name, value] : is.env()) env[name] = value;
  return CheckRenderedFlags(ServeTool(platform), spec, argv, 2);
}

}  // namespace

absl::StatusOr<core::LaunchCommand> RenderVllm(const v1::ExperimentSpec& spec, v1::Side side,
                                               const core::Endpoints& endpoints,
                                               const std::string& log_dir,
                                               const VllmOptions& options, VllmPlatform platform) {
  SERVELAB_ASSIGN_OR_RETURN(core::LaunchCommand command,
                            NewLaunchCommand(spec, side, endpoints, log_dir));
  if (side == v1::SIDE_ROUTER) {
    return RenderRouter(spec, endpoints, log_dir, options, platform, std::move(command));
  }
  SERVELAB_ASSIGN_OR_RETURN(const v1::InstanceSpec* instance, InstanceSpecFor(spec, side));
  const v1::InstanceSpec& is = *instance;
  const std::string field = InstanceFieldPath(side);
  if (is.model().empty()) return absl::InvalidArgumentError(field + ".model is required for vLLM");
  const int tp = std::max(1, is.tensor_parallel()), dp = std::max(1, is.data_parallel());
  if (is.expert_parallel() > 1 && is.expert_parallel() != tp * dp) {
    return absl::InvalidArgumentError(absl::StrCat(
        field,
        ".expert_parallel: vLLM's expert-parallel size is tensor_parallel x data_parallel = ",
        tp * dp, ", not ", is.expert_parallel()));
  }
  ServeArgs args;
  args.binary = spec.deployment().programs().vllm_binary().empty()
                    ? options.vllm_binary
                    : spec.deployment().programs().vllm_binary();
  // Rendered once before the ranks: a backend the platform lacks is named
  // even for a single process.
  SERVELAB_RETURN_IF_ERROR(KvTransferConfig(spec, side, platform, 0).status());
  SERVELAB_ASSIGN_OR_RETURN(args.additional_config, AdditionalConfig(spec, side, platform));
  args.platform_env = PlatformEnv(spec, side, endpoints, platform);
  command.served_model = is.served_model_name().empty() ? is.model() : is.served_model_name();

  // Ranks 1..N-1 listen beside rank 0, and the DP coordinator's RPC port
  // follows them (PortBeside: consecutive when the port is fixed).
  const int ranks = is.external_data_parallel() ? dp : 1;
  auto next_port = [&](int offset) {
    return PortBeside(spec, side, endpoints, command.port, offset);
  };
  SERVELAB_ASSIGN_OR_RETURN(const int rpc_port, next_port(ranks));
  SERVELAB_RETURN_IF_ERROR(RenderServe(spec, side, args, platform, command.port, 0, ranks, rpc_port,
                                       command.argv, command.env));
  for (int r = 1; r < ranks; ++r) {
    core::RankCommand& rank = command.extra_ranks.emplace_back();
    rank.dp_rank = r;
    SERVELAB_ASSIGN_OR_RETURN(rank.port, next_port(r));
    rank.log_path = absl::StrCat(log_dir, "/", SideLabel(side), ".rank", r, ".log");
    SERVELAB_RETURN_IF_ERROR(RenderServe(spec, side, args, platform, rank.port, r, ranks, rpc_port,
                                         rank.argv, rank.env));
  }
  return command;
}

}  // namespace servelab::engines
