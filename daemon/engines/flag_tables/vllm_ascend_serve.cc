// `vllm serve` on vllm-ascend. vllm-ascend is a vLLM platform plugin: it adds
// no CLI flags of its own (its options travel in --additional-config, a JSON
// object, e.g. {"ascend_scheduler_config": {...}}), so the flag set is vLLM's.
//
// vllm-ascend v0.11.0rc0 runs on vLLM v0.11.0. The only vLLM table we could
// transcribe is the 0.11.1-era snapshot (flag_tables/vllm_serve.cc), so this
// table reuses it; the few flags vLLM added between v0.11.0 and that snapshot
// (e.g. --max-cudagraph-capture-size, --tokens-only) are accepted here although
// v0.11.0 would reject them.
// Mooncake P/D runs through vllm_ascend/distributed/mooncake_connector.py
// (vllm-project/vllm-ascend @d9c9d2b57da8), which reads only
// --kv-transfer-config, no extra flags.
#include "daemon/engines/flag_tables/flag_tables.h"

namespace servelab::engines::flag_tables {

const FlagTable& VllmAscendServe0110rc0() {
  static const FlagTable* const table = new FlagTable{
      .tool = "vllm-ascend serve",
      .version = "0.11.0rc0",
      .source =
          "vLLM's serve flags (vllm serve 0.11.1 table: vllm/engine/arg_utils.py "
          "@99d7eb5d6a51, vllm/entrypoints/openai/cli_args.py @789340fbad95); "
          "vllm-ascend adds no flags",
      .flags = VllmServeFlags0111(),
      .positionals = 1,
      .underscores_as_dashes = true,
  };
  return *table;
}

}  // namespace servelab::engines::flag_tables
