#include "tests/engine_shim/engine_shim.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/engines/flag_table.h"
#include "sim/json.h"

namespace servelab::engine_shim {
namespace {

using engines::FlagTable;
using engines::ParsedArgs;

constexpr char kLoopback[] = "127.0.0.1";

std::string Env(const Environment& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

// Proxies and routers are versioned apart from the engine: SERVELAB_ROUTER_VERSION
// when set, else SERVELAB_ENGINE_VERSION when the tool has a table of that
// version (vLLM's toy proxy ships with vLLM), else the newest table.
std::string RouterVersion(const std::string& tool, const Environment& env) {
  auto router = env.find("SERVELAB_ROUTER_VERSION");
  if (router != env.end()) return router->second;
  auto engine = env.find("SERVELAB_ENGINE_VERSION");
  if (engine == env.end()) return "";
  for (std::string_view known : engines::KnownVersions(tool)) {
    if (known == engine->second) return engine->second;
  }
  return "";
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

absl::StatusOr<const FlagTable*> Table(const std::string& tool, const std::string& version) {
  absl::StatusOr<const FlagTable*> table = engines::FindFlagTable(tool, version);
  if (!table.ok()) return Invalid(std::string(table.status().message()));
  return table;
}

// Parses `args` with the table of `tool` at `version` (as Table) and names
// that table in `plan`.
absl::StatusOr<ParsedArgs> ParseAs(const std::string& tool, const std::string& version,
                                   const std::vector<std::string>& args, ShimPlan& plan) {
  absl::StatusOr<const FlagTable*> table = Table(tool, version);
  if (!table.ok()) return table.status();
  absl::StatusOr<ParsedArgs> parsed = engines::ParseFlags(**table, args);
  if (!parsed.ok()) return Invalid(std::string(parsed.status().message()));
  plan.tool = std::string((*table)->tool);
  plan.version = std::string((*table)->version);
  return parsed;
}

// A flag's last value as an int (the table already checked the syntax);
// vLLM's human-readable forms ("16k", "1K") are expanded.
std::optional<int64_t> IntFlag(const ParsedArgs& args, const std::string& flag) {
  if (!args.Has(flag)) return std::nullopt;
  std::string text = args.Last(flag);
  int64_t multiplier = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'k':
        multiplier = 1000;
        break;
      case 'm':
        multiplier = 1000 * 1000;
        break;
      case 'g':
        multiplier = 1000 * 1000 * 1000;
        break;
      case 'K':
        multiplier = 1 << 10;
        break;
      case 'M':
        multiplier = 1 << 20;
        break;
      case 'G':
        multiplier = 1 << 30;
        break;
      default:
        break;
    }
  }
  if (multiplier != 1) {
    double number = 0;
    if (!absl::SimpleAtod(text.substr(0, text.size() - 1), &number)) return std::nullopt;
    return static_cast<int64_t>(number * multiplier);
  }
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) return std::nullopt;
  return value;
}

int64_t IntOr(const ParsedArgs& args, const std::string& flag, int64_t fallback) {
  return IntFlag(args, flag).value_or(fallback);
}

// The HTTP host the sim binds: loopback only (tests never listen off it).
absl::StatusOr<std::string> LoopbackHost(const ParsedArgs& args) {
  if (!args.Has("--host")) return std::string(kLoopback);
  std::string host = args.Last("--host");
  if (host == kLoopback || host == "localhost") return std::string(kLoopback);
  return Invalid(absl::StrCat("--host ", host,
                              ": the engine shim serves on 127.0.0.1 only (tests never bind off "
                              "loopback)"));
}

void AddCapacity(ShimPlan& plan, const ParsedArgs& args, const std::string& flag,
                 const std::string& key) {
  std::optional<int64_t> value = IntFlag(args, flag);
  if (value.has_value() && *value > 0) plan.capacity[key] = *value;
}

std::string TimeScale(const Environment& env) {
  std::string scale = Env(env, "SERVELAB_SIM_TIME_SCALE");
  return scale.empty() ? "1" : scale;
}

void AddCommonSimArgs(ShimPlan& plan, const std::string& compat, const std::string& role,
                      const std::string& host, int64_t port, const Environment& env) {
  plan.sim_args = {"--compat", compat,   "--role",           role,           "--host",
                   host,       "--port", absl::StrCat(port), "--time-scale", TimeScale(env)};
}

// ---------------------------------------------------------------------------
// vLLM / vllm-ascend `serve`.

struct KvTransfer {
  std::string connector;
  std::string role;
  sim::JsonValue config;
};

// vllm/config/kv_transfer.py KVTransferConfig.__post_init__: kv_role must be
// one of kv_producer / kv_consumer / kv_both, and is required when
// kv_connector is set. The shim also requires kv_connector: every P/D
// instance the daemon launches names one.
absl::StatusOr<std::optional<KvTransfer>> ReadKvTransfer(const ParsedArgs& args) {
  if (!args.Has("--kv-transfer-config")) return std::optional<KvTransfer>();
  absl::StatusOr<sim::JsonValue> json = sim::ParseJson(args.Last("--kv-transfer-config"));
  if (!json.ok() || !json->is_object()) {
    return Invalid("--kv-transfer-config must be a JSON object");
  }
  KvTransfer kv;
  const sim::JsonValue* connector = json->Find("kv_connector");
  if (connector == nullptr || !connector->is_string() || connector->string_value().empty()) {
    return Invalid("--kv-transfer-config: kv_connector is required (a string)");
  }
  kv.connector = connector->string_value();
  const sim::JsonValue* role = json->Find("kv_role");
  if (role == nullptr || !role->is_string()) {
    return Invalid(
        "--kv-transfer-config: Please specify kv_role when kv_connector is set, supported roles "
        "are ('kv_producer', 'kv_consumer', 'kv_both')");
  }
  kv.role = role->string_value();
  if (kv.role != "kv_producer" && kv.role != "kv_consumer" && kv.role != "kv_both") {
    return Invalid(absl::StrCat("--kv-transfer-config: Unsupported kv_role: ", kv.role,
                                ". Supported roles are ('kv_producer', 'kv_consumer', 'kv_both')"));
  }
  kv.config = *std::move(json);
  return std::optional<KvTransfer>(std::move(kv));
}

// The data-parallel ranks this process hosts. vLLM starts one engine core per
// local rank: ranks start..start+local-1 (--data-parallel-start-rank,
// --data-parallel-size-local, default all of --data-parallel-size), or just
// --data-parallel-rank in external-load-balancer mode.
std::vector<int64_t> LocalDpRanks(const ParsedArgs& args) {
  if (std::optional<int64_t> rank = IntFlag(args, "--data-parallel-rank")) return {*rank};
  int64_t dp = std::max<int64_t>(1, IntOr(args, "--data-parallel-size", 1));
  int64_t local = std::max<int64_t>(1, IntOr(args, "--data-parallel-size-local", dp));
  int64_t start = IntOr(args, "--data-parallel-start-rank", 0);
  std::vector<int64_t> ranks;
  for (int64_t i = 0; i < local; ++i) ranks.push_back(start + i);
  return ranks;
}

// vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py
// NixlConnectorScheduler: each DP engine's handshake listener binds
// VLLM_NIXL_SIDE_CHANNEL_HOST:VLLM_NIXL_SIDE_CHANNEL_PORT + data_parallel_index.
// Upstream defaults the two (vllm/envs.py: localhost, 5600); the shim requires
// both so no test ever shares the fixed default port.
absl::Status PlanNixl(const ParsedArgs& args, const Environment& env, ShimPlan& plan) {
  std::string host = Env(env, "VLLM_NIXL_SIDE_CHANNEL_HOST");
  std::string port_text = Env(env, "VLLM_NIXL_SIDE_CHANNEL_PORT");
  if (!env.count("VLLM_NIXL_SIDE_CHANNEL_PORT")) {
    return Invalid(
        "NixlConnector needs VLLM_NIXL_SIDE_CHANNEL_PORT in the environment (the shim refuses "
        "upstream's fixed default 5600)");
  }
  int64_t base = 0;
  if (!absl::SimpleAtoi(port_text, &base) || base <= 0 || base > 65535) {
    return Invalid(absl::StrCat("VLLM_NIXL_SIDE_CHANNEL_PORT=", port_text, " is not a port"));
  }
  if (!env.count("VLLM_NIXL_SIDE_CHANNEL_HOST")) {
    return Invalid("NixlConnector needs VLLM_NIXL_SIDE_CHANNEL_HOST in the environment");
  }
  if (host != kLoopback) {
    return Invalid(absl::StrCat("VLLM_NIXL_SIDE_CHANNEL_HOST=", host,
                                ": the engine shim binds side channels on 127.0.0.1 only"));
  }
  for (int64_t rank : LocalDpRanks(args)) {
    int64_t port = base + rank;
    if (port > 65535) {
      return Invalid(
          absl::StrCat("NIXL side channel port ", port, " of DP rank ", rank, " is out of range"));
    }
    plan.bindings.push_back(
        {kLoopback, static_cast<int>(port), absl::StrCat("NIXL side channel of DP rank ", rank)});
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> JsonInt(const sim::JsonValue* value, const std::string& what) {
  if (value == nullptr)
    return Invalid(absl::StrCat("--kv-transfer-config: ", what, " is required"));
  if (!value->is_integer()) {
    return Invalid(absl::StrCat("--kv-transfer-config: ", what, " must be an integer"));
  }
  return value->int_value();
}

// vllm_ascend/distributed/mooncake_connector.py (vllm-project/vllm-ascend
// @d9c9d2b57da8): MooncakeConnectorWorker._get_prefill_decode_size asserts
// kv_connector_extra_config.prefill.{tp_size,dp_size} and
// decode.{tp_size,dp_size}; __init__ raises unless prefill tp >= decode tp;
// on a kv_producer (register_kv_caches), each TP worker's KVCacheSendingThread
// binds a ZMQ ROUTER on kv_port + data_parallel_rank_local *
// tensor_parallel_size + tp_rank; consumers only connect. (KVTransferConfig
// defaults kv_port to 14579; the shim requires it.) One process hosts local
// DP ranks 0..data_parallel_size_local-1, or just one with --data-parallel-rank.
absl::Status PlanMooncake(const ParsedArgs& args, const KvTransfer& kv, ShimPlan& plan) {
  const sim::JsonValue* extra = kv.config.Find("kv_connector_extra_config");
  if (extra == nullptr || !extra->is_object()) {
    return Invalid(absl::StrCat(kv.connector,
                                " needs kv_connector_extra_config with prefill and decode "
                                "{dp_size, tp_size}"));
  }
  std::map<std::string, int64_t> sizes;
  for (const char* side : {"prefill", "decode"}) {
    const sim::JsonValue* group = extra->Find(side);
    if (group == nullptr || !group->is_object()) {
      return Invalid(absl::StrCat("--kv-transfer-config: kv_connector_extra_config.", side,
                                  " is required (an object with dp_size and tp_size)"));
    }
    for (const char* key : {"dp_size", "tp_size"}) {
      std::string what = absl::StrCat("kv_connector_extra_config.", side, ".", key);
      absl::StatusOr<int64_t> value = JsonInt(group->Find(key), what);
      if (!value.ok()) return value.status();
      sizes[absl::StrCat(side, ".", key)] = *value;
    }
  }
  if (sizes["prefill.tp_size"] < sizes["decode.tp_size"]) {
    return Invalid(absl::StrCat(
        "prefill_tp_size: ", sizes["prefill.tp_size"],
        " must be greater than or equal to the decode_tp_size: ", sizes["decode.tp_size"]));
  }
  const sim::JsonValue* kv_port = kv.config.Find("kv_port");
  int64_t base = 0;
  if (kv_port == nullptr)
    return Invalid(absl::StrCat(kv.connector, " needs kv_port in --kv-transfer-config"));
  // KVTransferConfig.kv_port is an int; pydantic also takes "20001" (the
  // vllm-ascend examples write it quoted).
  if (kv_port->is_integer()) {
    base = kv_port->int_value();
  } else if (!kv_port->is_string() || !absl::SimpleAtoi(kv_port->string_value(), &base)) {
    return Invalid("--kv-transfer-config: kv_port must be an integer");
  }
  if (kv.role != "kv_producer") return absl::OkStatus();
  int64_t tp = std::max<int64_t>(1, IntOr(args, "--tensor-parallel-size", 1));
  int64_t dp = std::max<int64_t>(1, IntOr(args, "--data-parallel-size", 1));
  int64_t local = args.Has("--data-parallel-rank")
                      ? 1
                      : std::max<int64_t>(1, IntOr(args, "--data-parallel-size-local", dp));
  for (int64_t dp_local = 0; dp_local < local; ++dp_local) {
    for (int64_t tp_rank = 0; tp_rank < tp; ++tp_rank) {
      int64_t port = base + dp_local * tp + tp_rank;
      if (base <= 0 || port > 65535) {
        return Invalid(absl::StrCat("Mooncake handshake port ", port, " is out of range"));
      }
      plan.bindings.push_back({kLoopback, static_cast<int>(port),
                               absl::StrCat("Mooncake handshake port of local DP rank ", dp_local,
                                            " TP rank ", tp_rank)});
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ShimPlan> PlanVllmServe(const std::vector<std::string>& rest,
                                       const Environment& env) {
  const std::string version = Env(env, "SERVELAB_ENGINE_VERSION");
  // Which table: vllm-ascend runs on Ascend NPUs (ASCEND_RT_VISIBLE_DEVICES) or
  // uses its Mooncake connector; its CLI is vLLM's, so a first parse with the
  // vLLM table is enough to read the connector.
  bool ascend = env.count("ASCEND_RT_VISIBLE_DEVICES") > 0;
  if (!ascend) {
    absl::StatusOr<const FlagTable*> vllm = Table("vllm serve", "");
    if (!vllm.ok()) return vllm.status();
    if (absl::StatusOr<ParsedArgs> first = engines::ParseFlags(**vllm, rest); first.ok()) {
      if (absl::StatusOr<std::optional<KvTransfer>> kv = ReadKvTransfer(*first);
          kv.ok() && kv->has_value()) {
        ascend = absl::StartsWith((*kv)->connector, "Mooncake");
      }
    }
  }
  ShimPlan plan;
  absl::StatusOr<ParsedArgs> args =
      ParseAs(ascend ? "vllm-ascend serve" : "vllm serve", version, rest, plan);
  if (!args.ok()) return args.status();
  absl::StatusOr<std::optional<KvTransfer>> kv = ReadKvTransfer(*args);
  if (!kv.ok()) return kv.status();
  std::string role = "unified";
  if (kv->has_value()) {
    const KvTransfer& transfer = **kv;
    role = transfer.role == "kv_producer"   ? "prefill"
           : transfer.role == "kv_consumer" ? "decode"
                                            : "unified";
    if (transfer.connector == "NixlConnector") {
      if (absl::Status s = PlanNixl(*args, env, plan); !s.ok()) return s;
    } else if (absl::StartsWith(transfer.connector, "Mooncake")) {
      if (absl::Status s = PlanMooncake(*args, transfer, plan); !s.ok()) return s;
    }
  }
  absl::StatusOr<std::string> host = LoopbackHost(*args);
  if (!host.ok()) return host.status();
  // cli_args.py FrontendArgs: port defaults to 8000.
  AddCommonSimArgs(plan, ascend ? "vllm-ascend" : "vllm", role, *host, IntOr(*args, "--port", 8000),
                   env);
  // --served-model-name is nargs="+"; the first name is what /v1/models reports.
  std::string model = args->positionals[0];
  if (auto it = args->flags.find("--served-model-name");
      it != args->flags.end() && !it->second.empty()) {
    model = it->second.front();
  }
  plan.sim_args.insert(plan.sim_args.end(), {"--model", model});
  AddCapacity(plan, *args, "--max-num-seqs", "max_num_seqs");
  AddCapacity(plan, *args, "--max-num-batched-tokens", "max_num_batched_tokens");
  AddCapacity(plan, *args, "--max-model-len", "max_model_len");
  if (args->Has("--enable-prompt-tokens-details")) {
    plan.sim_args.push_back("--enable-prompt-tokens-details");
  }
  return plan;
}

// ---------------------------------------------------------------------------
// SGLang launch_server.

absl::StatusOr<ShimPlan> PlanSglangServer(const std::vector<std::string>& rest,
                                          const Environment& env) {
  ShimPlan plan;
  absl::StatusOr<ParsedArgs> args =
      ParseAs("sglang launch_server", Env(env, "SERVELAB_ENGINE_VERSION"), rest, plan);
  if (!args.ok()) return args.status();

  // server_args.py add_cli_args: --model-path is required=True.
  if (!args->Has("--model-path")) {
    return Invalid("the following arguments are required: --model-path");
  }
  const int64_t tp = IntOr(*args, "--tp-size", 1);
  const int64_t dp = IntOr(*args, "--dp-size", 1);
  const int64_t ep = IntOr(*args, "--ep-size", 1);
  if (tp < 1 || dp < 1 || ep < 1) {
    return Invalid("--tp-size, --dp-size and --ep-size must be at least 1");
  }
  // python/sglang/srt/distributed/parallel_state.py initialize_model_parallel:
  // moe_tp_size = tensor_model_parallel_size // moe_ep_size and the EP groups
  // are strided by moe_tp_size, so the EP size must divide the TP size (EP
  // splits the experts inside the TP group; it is not an extra dimension).
  if (ep > tp || tp % ep != 0) {
    return Invalid(absl::StrCat("--ep-size ", ep, " must divide --tp-size ", tp,
                                " (SGLang's expert parallelism splits the TP group)"));
  }
  // server_args.py _handle_data_parallelism: with dp_size == 1 DP attention is
  // switched off; otherwise `assert self.tp_size % self.dp_size == 0`.
  if (args->Has("--enable-dp-attention") && dp > 1 && tp % dp != 0) {
    return Invalid(absl::StrCat("--enable-dp-attention: --tp-size ", tp,
                                " must be divisible by --dp-size ", dp));
  }
  // server_args.py _handle_eplb_and_dispatch sets ep_dispatch_algorithm to
  // "static" when --init-expert-location is given without one; it rejects
  // nothing, so neither does the shim.

  std::string mode =
      args->Has("--disaggregation-mode") ? args->Last("--disaggregation-mode") : "null";
  std::string role = mode == "prefill" ? "prefill" : mode == "decode" ? "decode" : "unified";
  if (mode == "prefill") {
    // The prefill server runs the bootstrap server decode instances register
    // with (python/sglang/srt/disaggregation/), on --disaggregation-bootstrap-port
    // (default 8998).
    int64_t port = IntOr(*args, "--disaggregation-bootstrap-port", 8998);
    if (port <= 0 || port > 65535) {
      return Invalid(absl::StrCat("--disaggregation-bootstrap-port ", port, " is not a port"));
    }
    plan.bindings.push_back({kLoopback, static_cast<int>(port), "SGLang bootstrap server"});
  }
  absl::StatusOr<std::string> host = LoopbackHost(*args);
  if (!host.ok()) return host.status();
  // ServerArgs.port defaults to 30000.
  AddCommonSimArgs(plan, "sglang", role, *host, IntOr(*args, "--port", 30000), env);
  std::string model = args->Has("--served-model-name") ? args->Last("--served-model-name")
                                                       : args->Last("--model-path");
  plan.sim_args.insert(plan.sim_args.end(), {"--model", model});
  AddCapacity(plan, *args, "--max-running-requests", "max_num_seqs");
  AddCapacity(plan, *args, "--chunked-prefill-size", "max_num_batched_tokens");  // -1 = off
  AddCapacity(plan, *args, "--context-length", "max_model_len");
  if (args->Has("--enable-cache-report")) plan.sim_args.push_back("--enable-cache-report");
  if (args->Has("--enable-metrics")) plan.sim_args.push_back("--enable-metrics");
  return plan;
}

// ---------------------------------------------------------------------------
// Routers and proxies.

absl::Status CheckPort(const std::string& flag, const std::string& text) {
  int64_t port = 0;
  if (!absl::SimpleAtoi(text, &port)) {
    return Invalid(absl::StrCat(flag, ": invalid int value: '", text, "'"));
  }
  if (port <= 0 || port > 65535) return Invalid(absl::StrCat(flag, ": ", text, " is not a port"));
  return absl::OkStatus();
}

// toy_proxy_server.py / load_balance_proxy_server_example.py parse_args: the
// host and port lists pair up ("Number of prefiller hosts must match number of
// prefiller ports"); ports are type=int.
absl::StatusOr<std::vector<std::string>> HostPortUrls(const ParsedArgs& args,
                                                      const std::string& what,
                                                      const std::string& hosts_flag,
                                                      const std::string& ports_flag,
                                                      const std::string& default_port) {
  std::vector<std::string> hosts = {"localhost"}, ports = {default_port};
  if (auto it = args.flags.find(hosts_flag); it != args.flags.end()) hosts = it->second;
  if (auto it = args.flags.find(ports_flag); it != args.flags.end()) ports = it->second;
  if (hosts.size() != ports.size()) {
    return Invalid(absl::StrCat("Number of ", what, " hosts must match number of ", what,
                                " ports (", hosts_flag, " has ", hosts.size(), ", ", ports_flag,
                                " has ", ports.size(), ")"));
  }
  std::vector<std::string> urls;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (absl::Status s = CheckPort(ports_flag, ports[i]); !s.ok()) return s;
    urls.push_back(absl::StrCat("http://", hosts[i], ":", ports[i]));
  }
  return urls;
}

absl::StatusOr<ShimPlan> PlanVllmProxy(const std::string& tool, const std::string& compat,
                                       const std::string& default_prefill_port,
                                       const std::string& default_decode_port,
                                       const std::vector<std::string>& rest,
                                       const Environment& env) {
  ShimPlan plan;
  absl::StatusOr<ParsedArgs> args = ParseAs(tool, RouterVersion(tool, env), rest, plan);
  if (!args.ok()) return args.status();
  absl::StatusOr<std::vector<std::string>> prefill = HostPortUrls(
      *args, "prefiller", "--prefiller-hosts", "--prefiller-ports", default_prefill_port);
  if (!prefill.ok()) return prefill.status();
  absl::StatusOr<std::vector<std::string>> decode =
      HostPortUrls(*args, "decoder", "--decoder-hosts", "--decoder-ports", default_decode_port);
  if (!decode.ok()) return decode.status();
  absl::StatusOr<std::string> host = LoopbackHost(*args);
  if (!host.ok()) return host.status();
  AddCommonSimArgs(plan, compat, "router", *host, IntOr(*args, "--port", 8000), env);
  for (const std::string& url : *prefill)
    plan.sim_args.insert(plan.sim_args.end(), {"--prefill-url", url});
  for (const std::string& url : *decode)
    plan.sim_args.insert(plan.sim_args.end(), {"--decode-url", url});
  return plan;
}

absl::Status CheckUrl(const std::string& flag, const std::string& url) {
  if (!absl::StartsWith(url, "http://") && !absl::StartsWith(url, "https://")) {
    return Invalid(absl::StrCat(flag, " ", url, ": expected an http:// or https:// URL"));
  }
  return absl::OkStatus();
}

// router_args.py: _parse_prefill_urls (--prefill URL [BOOTSTRAP_PORT], the port
// a number or 'none') and _validate_router_args (PD mode needs --prefill and
// --decode).
absl::StatusOr<ShimPlan> PlanSglangRouter(const std::vector<std::string>& rest,
                                          const Environment& env) {
  ShimPlan plan;
  absl::StatusOr<ParsedArgs> args =
      ParseAs("sglang router", RouterVersion("sglang router", env), rest, plan);
  if (!args.ok()) return args.status();
  if (!args->Has("--pd-disaggregation")) {
    return Invalid("the engine shim simulates P/D routers only: pass --pd-disaggregation");
  }
  std::vector<std::string> prefill_urls, decode_urls;
  if (auto it = args->flags.find("--prefill"); it != args->flags.end()) {
    // The values of every --prefill, in order: a URL, optionally followed by
    // its bootstrap port.
    for (const std::string& value : it->second) {
      if (absl::StartsWith(value, "http://") || absl::StartsWith(value, "https://")) {
        prefill_urls.push_back(value);
        continue;
      }
      if (prefill_urls.empty()) return CheckUrl("--prefill", value);
      int64_t port = 0;
      if (value != "none" && value != "None" && value != "NONE" &&
          !absl::SimpleAtoi(value, &port)) {
        return Invalid(
            absl::StrCat("Invalid bootstrap port: ", value, ". Must be a number or 'none'"));
      }
    }
  }
  if (auto it = args->flags.find("--decode"); it != args->flags.end()) {
    for (const std::string& url : it->second) {
      if (absl::Status s = CheckUrl("--decode", url); !s.ok()) return s;
      decode_urls.push_back(url);
    }
  }
  if (prefill_urls.empty()) return Invalid("PD disaggregation mode requires --prefill");
  if (decode_urls.empty()) return Invalid("PD disaggregation mode requires --decode");
  absl::StatusOr<std::string> host = LoopbackHost(*args);
  if (!host.ok()) return host.status();
  AddCommonSimArgs(plan, "sglang", "router", *host, IntOr(*args, "--port", 30000), env);
  for (const std::string& url : prefill_urls)
    plan.sim_args.insert(plan.sim_args.end(), {"--prefill-url", url});
  for (const std::string& url : decode_urls)
    plan.sim_args.insert(plan.sim_args.end(), {"--decode-url", url});
  return plan;
}

}  // namespace

absl::StatusOr<ShimPlan> PlanShim(const std::vector<std::string>& args, const Environment& env) {
  auto rest = [&](size_t from) {
    return std::vector<std::string>(args.begin() + std::min(from, args.size()), args.end());
  };
  if (!args.empty() && args[0] == "serve") return PlanVllmServe(rest(1), env);
  if (args.size() >= 2 && args[0] == "-m" && args[1] == "sglang.launch_server") {
    return PlanSglangServer(rest(2), env);
  }
  if (args.size() >= 2 && args[0] == "-m" && args[1] == "sglang_router.launch_router") {
    return PlanSglangRouter(rest(2), env);
  }
  if (!args.empty() && Basename(args[0]) == "toy_proxy_server.py") {
    // toy_proxy_server.py defaults: prefiller 8100, decoder 8200.
    return PlanVllmProxy("vllm toy_proxy", "vllm", "8100", "8200", rest(1), env);
  }
  if (!args.empty() && Basename(args[0]) == "load_balance_proxy_server_example.py") {
    // load_balance_proxy_server_example.py defaults: prefiller 8001, decoder 8002.
    return PlanVllmProxy("vllm-ascend lb_proxy", "vllm-ascend", "8001", "8002", rest(1), env);
  }
  return Invalid(
      absl::StrCat("not an engine invocation the shim knows: ", absl::StrJoin(args, " "),
                   " (expected `serve MODEL ...`, `-m sglang.launch_server ...`, "
                   "`-m sglang_router.launch_router ...`, `.../toy_proxy_server.py ...` or "
                   "`.../load_balance_proxy_server_example.py ...`)"));
}

std::string CapacityYaml(const std::map<std::string, int64_t>& capacity) {
  std::string yaml = "# Written by servelab-engine-shim from the engine's capacity flags.\n";
  for (const auto& [key, value] : capacity) absl::StrAppend(&yaml, key, ": ", value, "\n");
  return yaml;
}

}  // namespace servelab::engine_shim
