// `vllm serve` flags, transcribed from vLLM's parsers:
//   vllm/engine/arg_utils.py            EngineArgs.add_cli_args + AsyncEngineArgs.add_cli_args
//                                       (vllm-project/vllm @99d7eb5d6a51)
//   vllm/entrypoints/openai/cli_args.py make_arg_parser + FrontendArgs.add_cli_args
//                                       (vllm-project/vllm @789340fbad95)
//   vllm/utils/argparse_utils.py        FlexibleArgumentParser (underscores -> dashes)
//
// The stored snapshots are untagged commits of main between v0.11.0 and v0.12.0:
// they import vllm.utils.argparse_utils (new after v0.11.0), their deprecations
// say "will be removed in v0.12.0", they have --decode-context-parallel-size but
// not --prefill-context-parallel-size. We name the table 0.11.1.
//
// How get_kwargs() maps dataclass field types to argparse (arg_utils.py
// _compute_kwargs), which decides each FlagValue below:
//   bool                      -> BooleanOptionalAction (--x / --no-x)  kBoolOptional
//   Literal[...] (no str)     -> choices                               kChoice
//   list/tuple/set            -> nargs="+"                             kList
//   int                       -> int (human_readable_int for max_model_len,
//                                max_num_batched_tokens, kv_cache_memory_bytes)
//   float                     -> float
//   dict (without str)        -> json.loads                            kJson
//   a dataclass               -> TypeAdapter(cls).validate_json        kJson
//   dict | str, str, others   -> str                                   kString
// Literal types whose member list lives in another file (vllm/config/*.py) are
// kept as kString rather than guessed.
//
// Left out on purpose: the stored arg_utils.py also registers
// `--external_parameters`, which is not in upstream vLLM (a fork's edit in the
// stored copy), and `--hf-token` takes an optional value upstream (nargs="?"),
// which the table models as a required string.
#include "daemon/engines/flag_tables/flag_tables.h"

namespace servelab::engines::flag_tables {
namespace {

constexpr FlagValue kNone = FlagValue::kNone;
constexpr FlagValue kInt = FlagValue::kInt;
constexpr FlagValue kFloat = FlagValue::kFloat;
constexpr FlagValue kStr = FlagValue::kString;
constexpr FlagValue kJson = FlagValue::kJson;
constexpr FlagValue kList = FlagValue::kList;
constexpr FlagValue kBool = FlagValue::kBoolOptional;

FlagSpec F(std::string_view name, FlagValue value, std::vector<std::string_view> aliases = {}) {
  return FlagSpec{name, value, {}, std::move(aliases)};
}
FlagSpec Choice(std::string_view name, std::vector<std::string_view> choices) {
  return FlagSpec{name, FlagValue::kChoice, std::move(choices)};
}
FlagSpec HumanInt(std::string_view name) {
  return FlagSpec{name, FlagValue::kInt, {}, {}, /*human_readable_int=*/true};
}

}  // namespace

std::vector<FlagSpec> VllmServeFlags0111() {
  return {
      // cli_args.py make_arg_parser.
      F("--headless", kNone),
      F("--api-server-count", kInt, {"-asc"}),
      F("--config", kStr),
      // cli_args.py FrontendArgs.
      F("--host", kStr),
      F("--port", kInt),
      F("--uds", kStr),
      Choice("--uvicorn-log-level", {"critical", "debug", "error", "info", "trace", "warning"}),
      F("--disable-uvicorn-access-log", kBool),
      F("--allow-credentials", kBool),
      F("--allowed-origins", kJson),
      F("--allowed-methods", kJson),
      F("--allowed-headers", kJson),
      F("--api-key", kList),
      F("--lora-modules", kList),
      F("--chat-template", kStr),
      F("--chat-template-content-format", kStr),
      F("--trust-request-chat-template", kBool),
      F("--response-role", kStr),
      F("--ssl-keyfile", kStr),
      F("--ssl-certfile", kStr),
      F("--ssl-ca-certs", kStr),
      F("--enable-ssl-refresh", kBool),
      F("--ssl-cert-reqs", kInt),
      F("--root-path", kStr),
      F("--middleware", kStr),  // action="append"
      F("--return-tokens-as-token-ids", kBool),
      F("--disable-frontend-multiprocessing", kBool),
      F("--enable-request-id-headers", kBool),
      F("--enable-auto-tool-choice", kBool),
      F("--exclude-tools-when-tool-choice-none", kBool),
      F("--tool-call-parser", kStr),
      F("--tool-parser-plugin", kStr),
      F("--tool-server", kStr),
      F("--log-config-file", kStr),
      F("--max-log-len", kInt),
      F("--disable-fastapi-docs", kBool),
      F("--enable-prompt-tokens-details", kBool),
      F("--enable-server-load-tracking", kBool),
      F("--enable-force-include-usage", kBool),
      F("--enable-tokenizer-info-endpoint", kBool),
      F("--enable-log-outputs", kBool),
      F("--h11-max-incomplete-event-size", kInt),
      F("--h11-max-header-count", kInt),
      F("--log-error-stack", kBool),
      F("--tokens-only", kBool),
      // arg_utils.py ModelConfig group.
      F("--model", kStr),
      F("--runner", kStr),
      F("--convert", kStr),
      F("--task", kStr),
      F("--tokenizer", kStr),
      F("--tokenizer-mode", kStr),
      F("--trust-remote-code", kBool),
      F("--dtype", kStr),
      F("--seed", kInt),
      F("--hf-config-path", kStr),
      F("--allowed-local-media-path", kStr),
      F("--allowed-media-domains", kList),
      F("--revision", kStr),
      F("--code-revision", kStr),
      F("--rope-scaling", kJson),
      F("--rope-theta", kFloat),
      F("--tokenizer-revision", kStr),
      HumanInt("--max-model-len"),
      F("--quantization", kStr, {"-q"}),
      F("--enforce-eager", kBool),
      F("--max-logprobs", kInt),
      F("--logprobs-mode", kStr),
      F("--disable-sliding-window", kBool),
      F("--disable-cascade-attn", kBool),
      F("--skip-tokenizer-init", kBool),
      F("--enable-prompt-embeds", kBool),
      F("--served-model-name", kList),  // str | list[str] -> nargs="+"
      F("--config-format", kStr),
      F("--hf-token", kStr),
      F("--hf-overrides", kStr),
      F("--pooler-config", kJson),
      F("--override-pooler-config", kStr),
      F("--logits-processor-pattern", kStr),
      F("--generation-config", kStr),
      F("--override-generation-config", kJson),
      F("--enable-sleep-mode", kBool),
      F("--model-impl", kStr),
      F("--override-attention-dtype", kStr),
      F("--logits-processors", kList),
      F("--io-processor-plugin", kStr),
      // LoadConfig group.
      F("--load-format", kStr),
      F("--download-dir", kStr),
      F("--safetensors-load-strategy", kStr),
      F("--model-loader-extra-config", kJson),
      F("--ignore-patterns", kList),
      F("--use-tqdm-on-load", kBool),
      F("--pt-load-map-location", kStr),
      // StructuredOutputsConfig group (the guided-decoding ones are deprecated
      // and declared with type=str/bool, so they take a value).
      F("--reasoning-parser", kStr),
      F("--guided-decoding-backend", kStr),
      F("--guided-decoding-disable-fallback", kStr),
      F("--guided-decoding-disable-any-whitespace", kStr),
      F("--guided-decoding-disable-additional-properties", kStr),
      // ParallelConfig group.
      F("--distributed-executor-backend", kStr),
      F("--pipeline-parallel-size", kInt, {"-pp"}),
      F("--tensor-parallel-size", kInt, {"-tp"}),
      F("--decode-context-parallel-size", kInt, {"-dcp"}),
      F("--data-parallel-size", kInt, {"-dp"}),
      F("--data-parallel-rank", kInt, {"-dpn"}),
      F("--data-parallel-start-rank", kInt, {"-dpr"}),
      F("--data-parallel-size-local", kInt, {"-dpl"}),
      F("--data-parallel-address", kStr, {"-dpa"}),
      F("--data-parallel-rpc-port", kInt, {"-dpp"}),
      F("--data-parallel-backend", kStr, {"-dpb"}),
      F("--data-parallel-hybrid-lb", kBool),
      F("--enable-expert-parallel", kBool),
      F("--all2all-backend", kStr),
      F("--enable-dbo", kBool),
      F("--dbo-decode-token-threshold", kInt),
      F("--dbo-prefill-token-threshold", kInt),
      F("--disable-nccl-for-dp-synchronization", kBool),
      F("--enable-eplb", kBool),
      F("--eplb-config", kJson),
      F("--expert-placement-strategy", kStr),
      F("--num-redundant-experts", kInt),
      F("--eplb-window-size", kInt),
      F("--eplb-step-interval", kInt),
      F("--eplb-log-balancedness", kBool),
      F("--max-parallel-loading-workers", kInt),
      F("--ray-workers-use-nsight", kBool),
      F("--disable-custom-all-reduce", kBool),
      F("--worker-cls", kStr),
      F("--worker-extension-cls", kStr),
      F("--enable-multimodal-encoder-data-parallel", kNone),
      // CacheConfig group.
      F("--block-size", kInt),
      F("--gpu-memory-utilization", kFloat),
      HumanInt("--kv-cache-memory-bytes"),
      F("--swap-space", kFloat),
      F("--kv-cache-dtype", kStr),
      F("--num-gpu-blocks-override", kInt),
      F("--enable-prefix-caching", kBool),
      F("--prefix-caching-hash-algo", kStr),
      F("--cpu-offload-gb", kFloat),
      F("--calculate-kv-scales", kBool),
      F("--kv-sharing-fast-prefill", kBool),
      F("--mamba-cache-dtype", kStr),
      F("--mamba-ssm-cache-dtype", kStr),
      F("--mamba-block-size", kInt),
      // MultiModalConfig group.
      F("--limit-mm-per-prompt", kJson),
      F("--enable-mm-embeds", kBool),
      F("--media-io-kwargs", kJson),
      F("--mm-processor-kwargs", kJson),
      F("--mm-processor-cache-gb", kFloat),
      F("--disable-mm-preprocessor-cache", kNone),
      F("--mm-processor-cache-type", kStr),
      F("--mm-shm-cache-max-object-size-mb", kInt),
      F("--mm-encoder-tp-mode", kStr),
      F("--mm-encoder-attn-backend", kStr),
      F("--interleave-mm-strings", kBool),
      F("--skip-mm-profiling", kBool),
      F("--video-pruning-rate", kFloat),
      // LoRAConfig group.
      F("--enable-lora", kBool),
      F("--max-loras", kInt),
      F("--max-lora-rank", kInt),
      F("--lora-extra-vocab-size", kInt),
      F("--lora-dtype", kStr),
      F("--max-cpu-loras", kInt),
      F("--fully-sharded-loras", kBool),
      F("--default-mm-loras", kJson),
      // ObservabilityConfig group.
      F("--show-hidden-metrics-for-version", kStr),
      F("--otlp-traces-endpoint", kStr),
      F("--collect-detailed-traces", kList),
      // SchedulerConfig group.
      HumanInt("--max-num-batched-tokens"),
      F("--max-num-seqs", kInt),
      F("--max-num-partial-prefills", kInt),
      F("--max-long-partial-prefills", kInt),
      F("--long-prefill-token-threshold", kInt),
      F("--num-lookahead-slots", kInt),
      Choice("--scheduling-policy", {"fcfs", "priority"}),
      F("--enable-chunked-prefill", kBool),
      F("--disable-chunked-mm-input", kBool),
      F("--scheduler-cls", kStr),
      F("--disable-hybrid-kv-cache-manager", kBool),
      F("--async-scheduling", kBool),
      // CompilationConfig group.
      F("--cudagraph-capture-sizes", kList),
      F("--cuda-graph-sizes", kList),
      F("--max-cudagraph-capture-size", kInt),
      // VllmConfig group. --compilation-config also takes a bare level ("-O3").
      F("--speculative-config", kJson),
      F("--kv-transfer-config", kJson),
      F("--kv-events-config", kJson),
      F("--compilation-config", kStr, {"-O"}),
      F("--additional-config", kJson),
      F("--structured-outputs-config", kJson),
      // Ungrouped EngineArgs / AsyncEngineArgs flags.
      F("--disable-log-stats", kNone),
      F("--aggregate-engine-logging", kNone),
      F("--enable-log-requests", kBool),
      F("--disable-log-requests", kBool),
  };
}

const FlagTable& VllmServe0111() {
  static const FlagTable* const table = new FlagTable{
      .tool = "vllm serve",
      .version = "0.11.1",
      .source =
          "vllm-project/vllm vllm/engine/arg_utils.py @99d7eb5d6a51 + "
          "vllm/entrypoints/openai/cli_args.py @789340fbad95 (main between v0.11.0 and "
          "v0.12.0)",
      .flags = VllmServeFlags0111(),
      .positionals = 1,
      .underscores_as_dashes = true,
  };
  return *table;
}

}  // namespace servelab::engines::flag_tables
