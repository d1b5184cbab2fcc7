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

FlagSpec F(std::string_view name, FlagValue value) { return FlagSpec{name, value, {}}; }
FlagSpec Choice(std::string_view name, std::vector<std::string_view> choices) {
  return FlagSpec{name, FlagValue::kChoice, std::move(choices)};
}

}  // namespace

const FlagTable& SglangRouter021() {
  using V = FlagValue;
  static const FlagTable* const table = new FlagTable{
      .tool = "sglang router",
      .version = "0.2.1",
      .source = "sgl-project/sglang sgl-router/py_src/sglang_router/router_args.py @e46dcd87adca",
      .flags =
          {
              F("--host", V::kString),
              F("--port", V::kInt),
              F("--worker-urls", V::kList),
              Choice("--policy", {"random", "round_robin", "cache_aware", "power_of_two"}),
              Choice("--prefill-policy",
                     {"random", "round_robin", "cache_aware", "power_of_two", "bucket"}),
              Choice("--decode-policy", {"random", "round_robin", "cache_aware", "power_of_two"}),
              F("--mini-lb", V::kNone),
              F("--pd-disaggregation", V::kNone),
              F("--prefill", V::kList),
              F("--decode", V::kString),
              F("--worker-startup-timeout-secs", V::kInt),
              F("--worker-startup-check-interval", V::kInt),
              F("--cache-threshold", V::kFloat),
              F("--balance-abs-threshold", V::kInt),
              F("--balance-rel-threshold", V::kFloat),
              F("--bucket-adjust-interval-secs", V::kInt),
              F("--eviction-interval-secs", V::kInt),
              F("--max-tree-size", V::kInt),
              F("--max-payload-size", V::kInt),
              F("--dp-aware", V::kNone),
              F("--enable-igw", V::kNone),
              F("--api-key", V::kString),
              F("--log-dir", V::kString),
              Choice("--log-level", {"debug", "info", "warn", "error"}),
              F("--service-discovery", V::kNone),
              F("--selector", V::kList),
              F("--service-discovery-port", V::kInt),
              F("--service-discovery-namespace", V::kString),
              F("--prefill-selector", V::kList),
              F("--decode-selector", V::kList),
              F("--prometheus-port", V::kInt),
              F("--prometheus-host", V::kString),
              F("--request-id-headers", V::kList),
              F("--request-timeout-secs", V::kInt),
              F("--retry-max-retries", V::kInt),
              F("--retry-initial-backoff-ms", V::kInt),
              F("--retry-max-backoff-ms", V::kInt),
              F("--retry-backoff-multiplier", V::kFloat),
              F("--retry-jitter-factor", V::kFloat),
              F("--disable-retries", V::kNone),
              F("--cb-failure-threshold", V::kInt),
              F("--cb-success-threshold", V::kInt),
              F("--cb-timeout-duration-secs", V::kInt),
              F("--cb-window-duration-secs", V::kInt),
              F("--disable-circuit-breaker", V::kNone),
              F("--health-failure-threshold", V::kInt),
              F("--health-success-threshold", V::kInt),
              F("--health-check-timeout-secs", V::kInt),
              F("--health-check-interval-secs", V::kInt),
              F("--health-check-endpoint", V::kString),
              F("--max-concurrent-requests", V::kInt),
              F("--queue-size", V::kInt),
              F("--queue-timeout-secs", V::kInt),
              F("--rate-limit-tokens-per-second", V::kInt),
              F("--cors-allowed-origins", V::kList),
              F("--model-path", V::kString),
              F("--tokenizer-path", V::kString),
              F("--chat-template", V::kString),
              F("--tokenizer-cache-enable-l0", V::kNone),
              F("--tokenizer-cache-l0-max-entries", V::kInt),
              F("--tokenizer-cache-enable-l1", V::kNone),
              F("--tokenizer-cache-l1-max-memory", V::kInt),
              F("--reasoning-parser", V::kString),
              F("--tool-call-parser", V::kString),
              F("--mcp-config-path", V::kString),
              Choice("--backend", {"sglang", "openai"}),
              Choice("--history-backend", {"memory", "none", "oracle"}),
              F("--oracle-wallet-path", V::kString),
              F("--oracle-tns-alias", V::kString),
              F("--oracle-connect-descriptor", V::kString),
              F("--oracle-username", V::kString),
              F("--oracle-password", V::kString),
              F("--oracle-pool-min", V::kInt),
              F("--oracle-pool-max", V::kInt),
              F("--oracle-pool-timeout-secs", V::kInt),
              F("--client-cert-path", V::kString),
              F("--client-key-path", V::kString),
              F("--ca-cert-paths", V::kList),
              F("--enable-trace", V::kNone),
              F("--otlp-traces-endpoint", V::kString),
          },
      .positionals = 0,
  };
  return *table;
}

}  // namespace servelab::engines::flag_tables
