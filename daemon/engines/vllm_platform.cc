#include "daemon/engines/vllm_platform.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/json_quote.h"
#include "daemon/engines/render_common.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace servelab::engines {
namespace {

constexpr int kDefaultNixlSideChannelPort = 5600;  // vllm/envs.py
constexpr int kDefaultMooncakeKvPort = 20001;      // vllm-ascend examples

int Ranks(const v1::InstanceSpec& side) {
  return std::max(1, side.data_parallel()) * std::max(1, side.tensor_parallel());
}

std::string Connector(const v1::ExperimentSpec& spec, VllmPlatform platform) {
  const std::string& backend = spec.deployment().kv_transfer().backend();
  if (!backend.empty()) return backend;
  return platform == VllmPlatform::kCuda ? "NixlConnector" : "MooncakeConnectorV1";
}

// The side's host x n and the ports of every rank of a side.
void AddUpstreams(std::vector<std::string>& argv, const char* hosts_flag, const char* ports_flag,
                  const std::string& host, int port, const std::vector<int>& extra_ports) {
  argv.push_back(hosts_flag);
  for (size_t i = 0; i <= extra_ports.size(); ++i) argv.push_back(host);
  argv.push_back(ports_flag);
  argv.push_back(absl::StrCat(port));
  for (int p : extra_ports) argv.push_back(absl::StrCat(p));
}

// JSON with object keys in sorted order: a rendered command must be the same
// text every time (protobuf's map order is unspecified).
std::string SortedJson(const google::protobuf::Value& value) {
  switch (value.kind_case()) {
    case google::protobuf::Value::kStructValue: {
      std::map<std::string, const google::protobuf::Value*> sorted;
      for (const auto& [key, v] : value.struct_value().fields()) sorted[key] = &v;
      std::string out = "{";
      for (const auto& [key, v] : sorted) {
        if (out.size() > 1) out += ",";
        absl::StrAppend(&out, JsonQuote(key), ":", SortedJson(*v));
      }
      return out + "}";
    }
    case google::protobuf::Value::kListValue: {
      std::string out = "[";
      for (const google::protobuf::Value& v : value.list_value().values()) {
        if (out.size() > 1) out += ",";
        out += SortedJson(v);
      }
      return out + "]";
    }
    case google::protobuf::Value::kStringValue:
      return JsonQuote(value.string_value());
    case google::protobuf::Value::kNumberValue: {
      const double n = value.number_value();
      return n == static_cast<double>(static_cast<int64_t>(n))
                 ? absl::StrCat(static_cast<int64_t>(n))
                 : absl::StrCat(n);
    }
    case google::protobuf::Value::kBoolValue:
      return value.bool_value() ? "true" : "false";
    default:
      return "null";
  }
}

}  // namespace

const char* DeviceVariable(VllmPlatform platform) {
  return platform == VllmPlatform::kCuda ? "CUDA_VISIBLE_DEVICES" : "ASCEND_RT_VISIBLE_DEVICES";
}

const char* ServeTool(VllmPlatform platform) {
  return platform == VllmPlatform::kCuda ? "vllm serve" : "vllm-ascend serve";
}

absl::StatusOr<std::string> KvTransferConfig(const v1::ExperimentSpec& spec, v1::Side side,
                                             VllmPlatform platform, int external_rank) {
  const std::string connector = Connector(spec, platform);
  const char* role = side == v1::SIDE_PREFILL ? "kv_producer" : "kv_consumer";
  if (platform == VllmPlatform::kCuda) {
    if (connector != "NixlConnector") {
      return absl::InvalidArgumentError(absl::StrCat(
          "deployment.kv_transfer.backend: \"", connector,
          "\" is not rendered for engine vllm (NixlConnector); use engine command for others"));
    }
    return absl::StrCat(R"({"kv_connector":"NixlConnector","kv_role":")", role, R"("})");
  }
  if (connector == "MooncakeLayerwiseConnector") {
    // The layerwise connector runs decode first and needs
    // load_balance_proxy_layerwise_server_example.py (its /v1/metaserver
    // callback); behind the load-balance proxy prefill gets no
    // remote_block_ids and fails every request.
    return absl::InvalidArgumentError(
        "deployment.kv_transfer.backend: \"MooncakeLayerwiseConnector\" needs vllm-ascend's "
        "layerwise proxy, which engine vllm_ascend does not launch yet; use MooncakeConnectorV1, "
        "or engine command with that proxy in deployment.router.command_argv");
  }
  if (connector != "MooncakeConnectorV1") {
    return absl::InvalidArgumentError(
        absl::StrCat("deployment.kv_transfer.backend: \"", connector,
                     "\" is not a vllm-ascend connector (MooncakeConnectorV1)"));
  }
  const std::string module = "vllm_ascend.distributed.mooncake_connector";
  const v1::InstanceSpec& p = spec.deployment().prefill();
  const v1::InstanceSpec& d = spec.deployment().decode();
  const int base = spec.deployment().kv_transfer().kv_port() > 0
                       ? spec.deployment().kv_transfer().kv_port()
                       : kDefaultMooncakeKvPort;
  // Decode's ports start after every prefill rank's, so one host holds both.
  // A worker binds kv_port + data_parallel_rank_local * tp + tp_rank
  // (vllm-ascend 0.11.0rc0 mooncake_connector.py), and a process started with
  // --data-parallel-rank N has data_parallel_rank_local 0 (vLLM arg_utils), so
  // every external rank would bind the same ports: rank r gets its own base,
  // reproducing the internal-DP layout. Decode learns prefill's port from
  // kv_transfer_params (remote_port), not from this base. Later vllm-ascend
  // offsets by the global rank, which needs its own rule with its flag table.
  const v1::InstanceSpec& own = side == v1::SIDE_PREFILL ? p : d;
  const int kv_port = (side == v1::SIDE_PREFILL ? base : base + Ranks(p)) +
                      external_rank * std::max(1, own.tensor_parallel());
  return absl::StrCat(
      R"({"kv_connector":")", connector, R"(","kv_role":")", role, R"(","kv_port":")", kv_port,
      R"(","engine_id":")", side == v1::SIDE_PREFILL ? 0 : 1, R"(","kv_connector_module_path":")",
      module, R"(","kv_connector_extra_config":{"prefill":{"dp_size":)",
      std::max(1, p.data_parallel()), R"(,"tp_size":)", std::max(1, p.tensor_parallel()),
      R"(},"decode":{"dp_size":)", std::max(1, d.data_parallel()), R"(,"tp_size":)",
      std::max(1, d.tensor_parallel()), "}}}");
}

std::map<std::string, std::string> PlatformEnv(const v1::ExperimentSpec& spec, v1::Side side,
                                               const core::Endpoints& endpoints,
                                               VllmPlatform platform) {
  std::map<std::string, std::string> env;
  if (platform == VllmPlatform::kCuda) {
    const v1::KvTransferSpec& kv = spec.deployment().kv_transfer();
    const int base =
        kv.side_channel_base_port() > 0 ? kv.side_channel_base_port() : kDefaultNixlSideChannelPort;
    // Each side binds its side channel here and prefill advertises it to
    // decode (nixl_connector.py: remote_host), so it is the side's own
    // address: its node's under Slurm, where P and D may be apart.
    const std::string& own_host =
        side == v1::SIDE_PREFILL ? endpoints.prefill_host : endpoints.decode_host;
    env["VLLM_NIXL_SIDE_CHANNEL_HOST"] =
        kv.side_channel_host().empty() ? own_host : kv.side_channel_host();
    env["VLLM_NIXL_SIDE_CHANNEL_PORT"] =
        absl::StrCat(side == v1::SIDE_PREFILL ? base : base + Ranks(spec.deployment().prefill()));
  }
  // vllm/envs.py: int(os.getenv("VLLM_NIXL_ABORT_REQUEST_TIMEOUT", "480")), read by NIXL
  // and by vllm-ascend's Mooncake connector alike (whole seconds, rounded up).
  const google::protobuf::Duration& lease = spec.deployment().kv_transfer().abort_request_timeout();
  if (side == v1::SIDE_PREFILL && (lease.seconds() > 0 || lease.nanos() > 0)) {
    env["VLLM_NIXL_ABORT_REQUEST_TIMEOUT"] = absl::StrCat(lease.seconds() + (lease.nanos() > 0));
  }
  if (platform == VllmPlatform::kCuda) return env;
  const v1::AscendSpec& ascend = spec.deployment().ascend();
  if (!ascend.hccl_if_ip().empty()) env["HCCL_IF_IP"] = ascend.hccl_if_ip();
  if (!ascend.socket_ifname().empty()) {
    for (const char* name : {"GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME"}) {
      env[name] = ascend.socket_ifname();
    }
  }
  if (ascend.hccl_buffsize() > 0) env["HCCL_BUFFSIZE"] = absl::StrCat(ascend.hccl_buffsize());
  return env;
}

absl::StatusOr<std::string> AdditionalConfig(const v1::ExperimentSpec& spec, v1::Side side,
                                             VllmPlatform platform) {
  absl::StatusOr<const v1::InstanceSpec*> instance = InstanceSpecFor(spec, side);
  if (!instance.ok()) return instance.status();
  const v1::InstanceSpec& is = **instance;
  const std::string field = InstanceFieldPath(side);
  const std::string& layout = is.expert_layout().path();
  if (platform == VllmPlatform::kCuda && !layout.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field,
                     ".expert_layout: stock vLLM has no flag for a static expert layout file; use "
                     "engine vllm_ascend (additional_config expert_map_path) or engine command"));
  }
  if (is.additional_config().empty() && layout.empty()) return std::string();
  google::protobuf::Struct config;
  if (!is.additional_config().empty() &&
      !google::protobuf::util::JsonStringToMessage(is.additional_config(), &config).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".additional_config: not a JSON object: ", is.additional_config()));
  }
  // vllm-ascend 0.11 reads the map from the top level
  // (vllm_ascend/ascend_config.py: additional_config.get("expert_map_path"));
  // the nested eplb_config.expert_map_path of later releases is not read there.
  if (!layout.empty()) (*config.mutable_fields())["expert_map_path"].set_string_value(layout);
  google::protobuf::Value root;
  *root.mutable_struct_value() = std::move(config);
  return SortedJson(root);
}

absl::StatusOr<std::vector<std::string>> ProxyArgv(const v1::ExperimentSpec& spec,
                                                   const core::Endpoints& endpoints, int port,
                                                   const VllmOptions& options,
                                                   VllmPlatform platform, std::string* tool) {
  const v1::ProgramsSpec& programs = spec.deployment().programs();
  const std::string& python =
      programs.python_binary().empty() ? options.python_binary : programs.python_binary();
  std::string script = programs.proxy_script();
  if (script.empty()) {
    script = platform == VllmPlatform::kCuda ? options.proxy_script : options.ascend_proxy_script;
  }
  if (script.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "deployment.programs.proxy_script: no P/D proxy script (vLLM installs no proxy binary): "
        "give the path of ",
        platform == VllmPlatform::kCuda ? "vLLM's toy_proxy_server.py (--proxy-script)"
                                        : "vllm-ascend's load_balance_proxy_server_example.py "
                                          "(--ascend-proxy-script)",
        ", or deployment.router.command_argv"));
  }
  absl::StatusOr<int> prefill = UpstreamPort(spec, v1::SIDE_PREFILL, endpoints);
  if (!prefill.ok()) return prefill.status();
  absl::StatusOr<int> decode = UpstreamPort(spec, v1::SIDE_DECODE, endpoints);
  if (!decode.ok()) return decode.status();
  std::vector<std::string> argv = {python,           script,   "--host",
                                   ListenHost(spec), "--port", absl::StrCat(port)};
  const bool several =
      !endpoints.prefill_extra_ports.empty() || !endpoints.decode_extra_ports.empty();
  if (platform == VllmPlatform::kCuda && !several) {
    // toy_proxy_server.py's singular flags.
    argv.insert(argv.end(), {"--prefiller-host", endpoints.prefill_host, "--prefiller-port",
                             absl::StrCat(*prefill), "--decoder-host", endpoints.decode_host,
                             "--decoder-port", absl::StrCat(*decode)});
  } else {
    // nargs="+" lists: one host and port per DP rank.
    AddUpstreams(argv, "--prefiller-hosts", "--prefiller-ports", endpoints.prefill_host, *prefill,
                 endpoints.prefill_extra_ports);
    AddUpstreams(argv, "--decoder-hosts", "--decoder-ports", endpoints.decode_host, *decode,
                 endpoints.decode_extra_ports);
  }
  *tool = platform == VllmPlatform::kCuda ? "vllm toy_proxy" : "vllm-ascend lb_proxy";
  return argv;
}

}  // namespace servelab::engines
