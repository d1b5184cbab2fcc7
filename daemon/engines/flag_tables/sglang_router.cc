// `python -m sglang_router.launch_router`, transcribed from
//   sgl-router/py_src/sglang_router/router_args.py RouterArgs.add_cli_args
//   (sgl-project/sglang @e46dcd87adca; sglang-router 0.2.1 by the
//   sgl-router/pyproject.toml stored beside it).
// Plain argparse (no router- prefix: launch_router calls it with
// use_router_prefix=False). --prefill is nargs="+" action="append"
// (URL [BOOTSTRAP_PORT]); --decode is nargs=1 action="append" (URL); the
// older --pd-disaggregated spelling is gone (--pd-disaggregation).
// nargs="*" flags (--worker-urls, --request-id-headers, --cors-allowed-origins,
// --ca-cert-paths) are modelled as kList, so an empty list is rejected here.
#include "daemon/engines/flag_tables/flag_tables.h"

namespace servelab::engines::flag_tables {
namespace {

constexpr FlagValue kNone = FlagValue::kNone;
constexpr FlagValue kInt = FlagValue::kInt;
constexpr FlagValue kFloat = FlagValue::kFloat;
constexpr FlagValue kStr = FlagValue::kString;
constexpr FlagValue kChoice = FlagValue::kChoice;
constexpr FlagValue kList = FlagValue::kList;

const FlagRow kFlags[] = {
    {"--host", kStr},
    {"--port", kInt},
    {"--worker-urls", kList},
    {"--policy", kChoice, {"random", "round_robin", "cache_aware", "power_of_two"}},
    {"--prefill-policy",
     kChoice,
     {"random", "round_robin", "cache_aware", "power_of_two", "bucket"}},
    {"--decode-policy", kChoice, {"random", "round_robin", "cache_aware", "power_of_two"}},
    {"--mini-lb", kNone},
    {"--pd-disaggregation", kNone},
    {"--prefill", kList},
    {"--decode", kStr},
    {"--worker-startup-timeout-secs", kInt},
    {"--worker-startup-check-interval", kInt},
    {"--cache-threshold", kFloat},
    {"--balance-abs-threshold", kInt},
    {"--balance-rel-threshold", kFloat},
    {"--bucket-adjust-interval-secs", kInt},
    {"--eviction-interval-secs", kInt},
    {"--max-tree-size", kInt},
    {"--max-payload-size", kInt},
    {"--dp-aware", kNone},
    {"--enable-igw", kNone},
    {"--api-key", kStr},
    {"--log-dir", kStr},
    {"--log-level", kChoice, {"debug", "info", "warn", "error"}},
    {"--service-discovery", kNone},
    {"--selector", kList},
    {"--service-discovery-port", kInt},
    {"--service-discovery-namespace", kStr},
    {"--prefill-selector", kList},
    {"--decode-selector", kList},
    {"--prometheus-port", kInt},
    {"--prometheus-host", kStr},
    {"--request-id-headers", kList},
    {"--request-timeout-secs", kInt},
    {"--retry-max-retries", kInt},
    {"--retry-initial-backoff-ms", kInt},
    {"--retry-max-backoff-ms", kInt},
    {"--retry-backoff-multiplier", kFloat},
    {"--retry-jitter-factor", kFloat},
    {"--disable-retries", kNone},
    {"--cb-failure-threshold", kInt},
    {"--cb-success-threshold", kInt},
    {"--cb-timeout-duration-secs", kInt},
    {"--cb-window-duration-secs", kInt},
    {"--disable-circuit-breaker", kNone},
    {"--health-failure-threshold", kInt},
    {"--health-success-threshold", kInt},
    {"--health-check-timeout-secs", kInt},
    {"--health-check-interval-secs", kInt},
    {"--health-check-endpoint", kStr},
    {"--max-concurrent-requests", kInt},
    {"--queue-size", kInt},
    {"--queue-timeout-secs", kInt},
    {"--rate-limit-tokens-per-second", kInt},
    {"--cors-allowed-origins", kList},
    {"--model-path", kStr},
    {"--tokenizer-path", kStr},
    {"--chat-template", kStr},
    {"--tokenizer-cache-enable-l0", kNone},
    {"--tokenizer-cache-l0-max-entries", kInt},
    {"--tokenizer-cache-enable-l1", kNone},
    {"--tokenizer-cache-l1-max-memory", kInt},
    {"--reasoning-parser", kStr},
    {"--tool-call-parser", kStr},
    {"--mcp-config-path", kStr},
    {"--backend", kChoice, {"sglang", "openai"}},
    {"--history-backend", kChoice, {"memory", "none", "oracle"}},
    {"--oracle-wallet-path", kStr},
    {"--oracle-tns-alias", kStr},
    {"--oracle-connect-descriptor", kStr},
    {"--oracle-username", kStr},
    {"--oracle-password", kStr},
    {"--oracle-pool-min", kInt},
    {"--oracle-pool-max", kInt},
    {"--oracle-pool-timeout-secs", kInt},
    {"--client-cert-path", kStr},
    {"--client-key-path", kStr},
    {"--ca-cert-paths", kList},
    {"--enable-trace", kNone},
    {"--otlp-traces-endpoint", kStr},
};

}  // namespace

const FlagTable& SglangRouter021() {
  static const FlagTable* const table = new FlagTable{
      .tool = "sglang router",
      .version = "0.2.1",
      .source = "sgl-project/sglang sgl-router/py_src/sglang_router/router_args.py @e46dcd87adca",
      .flags = ToFlagSpecs(kFlags),
      .positionals = 0,
  };
  return *table;
}

}  // namespace servelab::engines::flag_tables
