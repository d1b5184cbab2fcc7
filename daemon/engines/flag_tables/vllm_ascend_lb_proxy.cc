// vllm-ascend's P/D load-balancing proxy, transcribed from parse_args() in
//   examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py
//   (vllm-project/vllm-ascend @93dbfa65652d; named after the vllm-ascend
//   release line it ships with, 0.11.0rc0).
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
          "@93dbfa65652d",
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
          },
      .positionals = 0,
  };
  return *table;
}

}  // namespace servelab::engines::flag_tables
