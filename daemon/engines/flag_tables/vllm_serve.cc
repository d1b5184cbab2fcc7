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
constexpr FlagValue kChoice = FlagValue::kChoice;
constexpr FlagValue kList = FlagValue::kList;
constexpr FlagValue kBool = FlagValue::kBoolOptional;

const FlagRow kFlags[] = {
    // cli_args.py make_arg_parser.
    {"--headless", kNone},
    {"--api-server-count", kInt, {}, {"-asc"}},
    {"--config", kStr},
    // cli_args.py FrontendArgs.
    {"--host", kStr},
    {"--port", kInt},
    {"--uds", kStr},
    {"--uvicorn-log-level", kChoice, {"critical", "debug", "error", "info", "trace", "warning"}},
    {"--disable-uvicorn-access-log", kBool},
    {"--allow-credentials", kBool},
    {"--allowed-origins", kJson},
    {"--allowed-methods", kJson},
    {"--allowed-headers", kJson},
    {"--api-key", kList},
    {"--lora-modules", kList},
    {"--chat-template", kStr},
    {"--chat-template-content-format", kStr},
    {"--trust-request-chat-template", kBool},
    {"--response-role", kStr},
    {"--ssl-keyfile", kStr},
    {"--ssl-certfile", kStr},
    {"--ssl-ca-certs", kStr},
    {"--enable-ssl-refresh", kBool},
    {"--ssl-cert-reqs", kInt},
    {"--root-path", kStr},
    {"--middleware", kStr},  // action="append"
    {"--return-tokens-as-token-ids", kBool},
    {"--disable-frontend-multiprocessing", kBool},
    {"--enable-request-id-headers", kBool},
    {"--enable-auto-tool-choice", kBool},
    {"--exclude-tools-when-tool-choice-none", kBool},
    {"--tool-call-parser", kStr},
    {"--tool-parser-plugin", kStr},
    {"--tool-server", kStr},
    {"--log-config-file", kStr},
    {"--max-log-len", kInt},
    {"--disable-fastapi-docs", kBool},
    {"--enable-prompt-tokens-details", kBool},
    {"--enable-server-load-tracking", kBool},
    {"--enable-force-include-usage", kBool},
    {"--enable-tokenizer-info-endpoint", kBool},
    {"--enable-log-outputs", kBool},
    {"--h11-max-incomplete-event-size", kInt},
    {"--h11-max-header-count", kInt},
    {"--log-error-stack", kBool},
    {"--tokens-only", kBool},
    // arg_utils.py ModelConfig group.
    {"--model", kStr},
    {"--runner", kStr},
    {"--convert", kStr},
    {"--task", kStr},
    {"--tokenizer", kStr},
    {"--tokenizer-mode", kStr},
    {"--trust-remote-code", kBool},
    {"--dtype", kStr},
    {"--seed", kInt},
    {"--hf-config-path", kStr},
    {"--allowed-local-media-path", kStr},
    {"--allowed-media-domains", kList},
    {"--revision", kStr},
    {"--code-revision", kStr},
    {"--rope-scaling", kJson},
    {"--rope-theta", kFloat},
    {"--tokenizer-revision", kStr},
    {"--max-model-len", kInt, {}, {}, /*human_readable_int=*/true},
    {"--quantization", kStr, {}, {"-q"}},
    {"--enforce-eager", kBool},
    {"--max-logprobs", kInt},
    {"--logprobs-mode", kStr},
    {"--disable-sliding-window", kBool},
    {"--disable-cascade-attn", kBool},
    {"--skip-tokenizer-init", kBool},
    {"--enable-prompt-embeds", kBool},
    {"--served-model-name", kList},  // str | list[str] -> nargs="+"
    {"--config-format", kStr},
    {"--hf-token", kStr},
    {"--hf-overrides", kStr},
    {"--pooler-config", kJson},
    {"--override-pooler-config", kStr},
    {"--logits-processor-pattern", kStr},
    {"--generation-config", kStr},
    {"--override-generation-config", kJson},
    {"--enable-sleep-mode", kBool},
    {"--model-impl", kStr},
    {"--override-attention-dtype", kStr},
    {"--logits-processors", kList},
    {"--io-processor-plugin", kStr},
    // LoadConfig group.
    {"--load-format", kStr},
    {"--download-dir", kStr},
    {"--safetensors-load-strategy", kStr},
    {"--model-loader-extra-config", kJson},
    {"--ignore-patterns", kList},
    {"--use-tqdm-on-load", kBool},
    {"--pt-load-map-location", kStr},
    // StructuredOutputsConfig group (the guided-decoding ones are deprecated
    // and declared with type=str/bool, so they take a value).
    {"--reasoning-parser", kStr},
    {"--guided-decoding-backend", kStr},
    {"--guided-decoding-disable-fallback", kStr},
    {"--guided-decoding-disable-any-whitespace", kStr},
    {"--guided-decoding-disable-additional-properties", kStr},
    // ParallelConfig group.
    {"--distributed-executor-backend", kStr},
    {"--pipeline-parallel-size", kInt, {}, {"-pp"}},
    {"--tensor-parallel-size", kInt, {}, {"-tp"}},
    {"--decode-context-parallel-size", kInt, {}, {"-dcp"}},
    {"--data-parallel-size", kInt, {}, {"-dp"}},
    {"--data-parallel-rank", kInt, {}, {"-dpn"}},
    {"--data-parallel-start-rank", kInt, {}, {"-dpr"}},
    {"--data-parallel-size-local", kInt, {}, {"-dpl"}},
    {"--data-parallel-address", kStr, {}, {"-dpa"}},
    {"--data-parallel-rpc-port", kInt, {}, {"-dpp"}},
    {"--data-parallel-backend", kStr, {}, {"-dpb"}},
    {"--data-parallel-hybrid-lb", kBool},
    {"--enable-expert-parallel", kBool},
    {"--all2all-backend", kStr},
    {"--enable-dbo", kBool},
    {"--dbo-decode-token-threshold", kInt},
    {"--dbo-prefill-token-threshold", kInt},
    {"--disable-nccl-for-dp-synchronization", kBool},
    {"--enable-eplb", kBool},
    {"--eplb-config", kJson},
    {"--expert-placement-strategy", kStr},
    {"--num-redundant-experts", kInt},
    {"--eplb-window-size", kInt},
    {"--eplb-step-interval", kInt},
    {"--eplb-log-balancedness", kBool},
    {"--max-parallel-loading-workers", kInt},
    {"--ray-workers-use-nsight", kBool},
    {"--disable-custom-all-reduce", kBool},
    {"--worker-cls", kStr},
    {"--worker-extension-cls", kStr},
    {"--enable-multimodal-encoder-data-parallel", kNone},
    // CacheConfig group.
    {"--block-size", kInt},
    {"--gpu-memory-utilization", kFloat},
    {"--kv-cache-memory-bytes", kInt, {}, {}, /*human_readable_int=*/true},
    {"--swap-space", kFloat},
    {"--kv-cache-dtype", kStr},
    {"--num-gpu-blocks-override", kInt},
    {"--enable-prefix-caching", kBool},
    {"--prefix-caching-hash-algo", kStr},
    {"--cpu-offload-gb", kFloat},
    {"--calculate-kv-scales", kBool},
    {"--kv-sharing-fast-prefill", kBool},
    {"--mamba-cache-dtype", kStr},
    {"--mamba-ssm-cache-dtype", kStr},
    {"--mamba-block-size", kInt},
    // MultiModalConfig group.
    {"--limit-mm-per-prompt", kJson},
    {"--enable-mm-embeds", kBool},
    {"--media-io-kwargs", kJson},
    {"--mm-processor-kwargs", kJson},
    {"--mm-processor-cache-gb", kFloat},
    {"--disable-mm-preprocessor-cache", kNone},
    {"--mm-processor-cache-type", kStr},
    {"--mm-shm-cache-max-object-size-mb", kInt},
    {"--mm-encoder-tp-mode", kStr},
    {"--mm-encoder-attn-backend", kStr},
    {"--interleave-mm-strings", kBool},
    {"--skip-mm-profiling", kBool},
    {"--video-pruning-rate", kFloat},
    // LoRAConfig group.
    {"--enable-lora", kBool},
    {"--max-loras", kInt},
    {"--max-lora-rank", kInt},
    {"--lora-extra-vocab-size", kInt},
    {"--lora-dtype", kStr},
    {"--max-cpu-loras", kInt},
    {"--fully-sharded-loras", kBool},
    {"--default-mm-loras", kJson},
    // ObservabilityConfig group.
    {"--show-hidden-metrics-for-version", kStr},
    {"--otlp-traces-endpoint", kStr},
    {"--collect-detailed-traces", kList},
    // SchedulerConfig group.
    {"--max-num-batched-tokens", kInt, {}, {}, /*human_readable_int=*/true},
    {"--max-num-seqs", kInt},
    {"--max-num-partial-prefills", kInt},
    {"--max-long-partial-prefills", kInt},
    {"--long-prefill-token-threshold", kInt},
    {"--num-lookahead-slots", kInt},
    {"--scheduling-policy", kChoice, {"fcfs", "priority"}},
    {"--enable-chunked-prefill", kBool},
    {"--disable-chunked-mm-input", kBool},
    {"--scheduler-cls", kStr},
    {"--disable-hybrid-kv-cache-manager", kBool},
    {"--async-scheduling", kBool},
    // CompilationConfig group.
    {"--cudagraph-capture-sizes", kList},
    {"--cuda-graph-sizes", kList},
    {"--max-cudagraph-capture-size", kInt},
    // VllmConfig group. --compilation-config also takes a bare level ("-O3").
    {"--speculative-config", kJson},
    {"--kv-transfer-config", kJson},
    {"--kv-events-config", kJson},
    {"--compilation-config", kStr, {}, {"-O"}},
    {"--additional-config", kJson},
    {"--structured-outputs-config", kJson},
    // Ungrouped EngineArgs / AsyncEngineArgs flags.
    {"--disable-log-stats", kNone},
    {"--aggregate-engine-logging", kNone},
    {"--enable-log-requests", kBool},
    {"--disable-log-requests", kBool},
};

}  // namespace

std::vector<FlagSpec> VllmServeFlags0111() { return ToFlagSpecs(kFlags); }

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
