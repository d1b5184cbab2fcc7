// The engine shim's decisions, separated from its process plumbing (main.cc):
// from the argv the daemon launched ("SHIM serve MODEL ...", "SHIM -m
// sglang.launch_server ...", "SHIM /x/toy_proxy_server.py ...") and the
// environment, work out which real engine tool this is, reject what that
// tool would reject at startup, and translate the rest into a servelab-sim
// command line.
//
//   absl::StatusOr<ShimPlan> plan = PlanShim({"serve", "/m", "--port", "8100"}, env);
//   // plan->tool == "vllm serve", plan->sim_args == {"--compat", "vllm", ...}
//
// Errors are INVALID_ARGUMENT with the message the shim prints (the caller
// exits 2): an invocation that is no known tool, a flag the tool's table
// (daemon/engines/flag_table.h) rejects, or a startup rule of the engine —
// each rule cites the upstream code it copies in engine_shim.cc.
//
// Environment read: SERVELAB_ENGINE_VERSION (table version of the engine
// server: vllm serve / vllm-ascend serve / sglang launch_server; newest when
// unset), SERVELAB_ROUTER_VERSION (the same for the proxies and the router;
// when unset they take SERVELAB_ENGINE_VERSION if they have a table of it,
// else their newest),
// SERVELAB_SIM_TIME_SCALE (default 1), ASCEND_RT_VISIBLE_DEVICES (marks
// vllm-ascend), VLLM_NIXL_SIDE_CHANNEL_HOST / VLLM_NIXL_SIDE_CHANNEL_PORT.
// Pure; thread-safe.
#ifndef SERVELAB_TESTS_ENGINE_SHIM_ENGINE_SHIM_H_
#define SERVELAB_TESTS_ENGINE_SHIM_ENGINE_SHIM_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace servelab::engine_shim {

// A TCP port the real engine would listen on besides its HTTP port (NIXL
// side channel, Mooncake handshake, SGLang bootstrap server). The shim binds
// it for the lifetime of the process so a second instance on the same port
// fails with "address in use", as the real engine would.
struct PortBinding {
  std::string host;  // Always 127.0.0.1: the shim never binds off loopback.
  int port = 0;
  std::string purpose;  // "NIXL side channel of DP rank 1", for the error message.
};

struct ShimPlan {
  std::string tool;     // The flag table's tool, "vllm serve".
  std::string version;  // The flag table's version, "0.11.1".
  // servelab-sim arguments (after the binary), except --config.
  std::vector<std::string> sim_args;
  std::vector<PortBinding> bindings;
  // sim/config.h capacity keys (max_num_seqs, max_num_batched_tokens,
  // max_model_len) the engine flags set; written to the --config YAML.
  std::map<std::string, int64_t> capacity;
};

using Environment = std::map<std::string, std::string>;

// `args` is argv without argv[0].
absl::StatusOr<ShimPlan> PlanShim(const std::vector<std::string>& args, const Environment& env);

// The YAML servelab-sim reads with --config for `capacity`.
std::string CapacityYaml(const std::map<std::string, int64_t>& capacity);

}  // namespace servelab::engine_shim

#endif  // SERVELAB_TESTS_ENGINE_SHIM_ENGINE_SHIM_H_
