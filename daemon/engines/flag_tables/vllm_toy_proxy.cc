// vLLM's P/D example proxy, transcribed from parse_args() in
//   tests/v1/kv_connector/nixl_integration/toy_proxy_server.py
//   (vllm-project/vllm @030ea52effcb; main between v0.11.0 and v0.12.0, named 0.11.1
//   to match the vllm serve table).
// A plain argparse.ArgumentParser: no underscore normalization, and no
// --verbose (a flag people reach for and the proxy rejects).
#include "daemon/engines/flag_tables/flag_tables.h"

namespace servelab::engines::flag_tables {

const FlagTable& VllmToyProxy0111() {
  static const FlagTable* const table = new FlagTable{
      .tool = "vllm toy_proxy",
      .version = "0.11.1",
      .source =
          "vllm-project/vllm tests/v1/kv_connector/nixl_integration/toy_proxy_server.py "
          "@030ea52effcb",
      .flags =
          {
              {"--port", FlagValue::kInt, {}},
              {"--host", FlagValue::kString, {}},
              {"--prefiller-hosts", FlagValue::kList, {}, {"--prefiller-host"}},
              {"--prefiller-ports", FlagValue::kList, {}, {"--prefiller-port"}},
              {"--decoder-hosts", FlagValue::kList, {}, {"--decoder-host"}},
              {"--decoder-ports", FlagValue::kList, {}, {"--decoder-port"}},
          },
      .positionals = 0,
  };
  return *table;
}

}  // namespace servelab::engines::flag_tables
