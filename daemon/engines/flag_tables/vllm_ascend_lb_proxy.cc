// vllm-ascend's P/D load-balancing proxy, transcribed from parse_args() in
//   examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py
//   (vllm-project/vllm-ascend @0713d90f). Named after the vllm-ascend release
// line whose engine it fronts, 0.11.0rc0; the proxy is the user's own file.
// Its synchronous flow (prefill with max_tokens 1, then decode with prefill's
// kv_transfer_params) is what MooncakeConnectorV1 needs. The script at
// 93dbfa65 has the first eight flags only and waits for a /v1/metaserver
// callback that MooncakeConnectorV1 never makes, so every request hangs:
// docs/design.md §9 says which script to run.
// Plain argparse; the host/port lists are nargs="+" and, unlike vLLM's toy
// proxy, have no singular aliases.
#include "daemon/engines/flag_tables/flag_tables.h"

namespace servelab::engines::flag_tables {

const FlagTable& VllmAscendLbProxy0110rc0() {
  static const FlagTable* const table = new FlagTable{
      .tool = "vllm-ascend lb_proxy",
      .version = "0.11.0rc0",
      .source =
          "vllm-project/vllm-ascend "
          "examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py "
          "@0713d90f",
      .flags =
          {
              {"--port", FlagValue::kInt, {}},
              {"--host", FlagValue::kString, {}},
              {"--prefiller-hosts", FlagValue::kList, {}},
              {"--prefiller-ports", FlagValue::kList, {}},
              {"--decoder-hosts", FlagValue::kList, {}},
              {"--decoder-ports", FlagValue::kList, {}},
              {"--max-retries", FlagValue::kInt, {}},
              {"--retry-delay", FlagValue::kFloat, {}},
              {"--max-waiting-retries", FlagValue::kInt, {}},
              {"--waiting-retry-interval", FlagValue::kFloat, {}},
              {"--workers", FlagValue::kInt, {}},
              {"--log-level",
               FlagValue::kChoice,
               {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}},
          },
      .positionals = 0,
  };
  return *table;
}

}  // namespace servelab::engines::flag_tables
