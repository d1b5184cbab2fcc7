// `python -m sglang.launch_server` flags, transcribed from SGLang's argument
// reference, which lists every ServerArgs.add_cli_args flag with its type and
// choices:
//   docs/advanced_features/server_arguments.md (sgl-project/sglang @b36e8e198b71)
// checked against python/sglang/srt/server_args.py for the flags the daemon
// renders and the checks the engine shim copies (the stored server_args.py is a
// later, restructured main, so the docs page is the faithful single-version
// source). The page matches the 0.5.5 line (DeepSeek NSA backends,
// --enable-nsa-prefill-context-parallel, --fp8-gemm-backend, transfer backends
// mooncake|nixl|ascend|fake); we name the table 0.5.5.
// Plain argparse: flag names are taken literally (no underscore form), and a
// unique prefix works ("--tp 2" is "--tp-size 2").
// Registry-backed choices (--reasoning-parser, --tool-call-parser) are kept as
// free strings: plugins extend them at run time.
#include "daemon/engines/flag_tables/flag_tables.h"

namespace servelab::engines::flag_tables {
namespace {

constexpr FlagValue kNone = FlagValue::kNone;
constexpr FlagValue kInt = FlagValue::kInt;
constexpr FlagValue kFloat = FlagValue::kFloat;
constexpr FlagValue kStr = FlagValue::kString;
constexpr FlagValue kJson = FlagValue::kJson;
constexpr FlagValue kList = FlagValue::kList;

FlagSpec F(std::string_view name, FlagValue value, std::vector<std::string_view> aliases = {}) {
  return FlagSpec{name, value, {}, std::move(aliases)};
}
FlagSpec Choice(std::string_view name, std::vector<std::string_view> choices) {
  return FlagSpec{name, FlagValue::kChoice, std::move(choices)};
}

const std::vector<std::string_view>& AttentionBackends() {
  static const auto* const backends =
      new std::vector<std::string_view>{"triton",     "torch_native", "flex_attention",
                                        "nsa",        "cutlass_mla",  "fa3",
                                        "fa4",        "flashinfer",   "flashmla",
                                        "trtllm_mla", "trtllm_mha",   "dual_chunk_flash_attn",
                                        "aiter",      "wave",         "intel_amx",
                                        "ascend"};
  return *backends;
}

std::vector<FlagSpec> Flags() {
  return {
      // Model and tokenizer.
      F("--model-path", kStr, {"--model"}),
      F("--tokenizer-path", kStr),
      Choice("--tokenizer-mode", {"auto", "slow"}),
      F("--tokenizer-worker-num", kInt),
      F("--skip-tokenizer-init", kNone),
      Choice("--load-format", {"auto", "pt", "safetensors", "npcache", "dummy", "sharded_state",
                               "gguf", "bitsandbytes", "layered", "remote", "remote_instance"}),
      F("--model-loader-extra-config", kStr),
      F("--trust-remote-code", kNone),
      F("--context-length", kInt),
      F("--is-embedding", kNone),
      F("--enable-multimodal", kNone),
      F("--revision", kStr),
      F("--model-impl", kStr),
      // HTTP server.
      F("--host", kStr),
      F("--port", kInt),
      F("--skip-server-warmup", kNone),
      F("--warmups", kStr),
      F("--nccl-port", kInt),
      // Quantization and data type.
      Choice("--dtype", {"auto", "half", "float16", "bfloat16", "float", "float32"}),
      Choice("--quantization", {"awq", "fp8", "gptq", "marlin", "gptq_marlin", "awq_marlin",
                                "bitsandbytes", "gguf", "modelopt", "modelopt_fp4", "petit_nvfp4",
                                "w8a8_int8", "w8a8_fp8", "moe_wna16", "qoq", "w4afp8", "mxfp4"}),
      F("--quantization-param-path", kStr),
      F("--modelopt-quant", kStr),
      F("--modelopt-checkpoint-restore-path", kStr),
      F("--modelopt-checkpoint-save-path", kStr),
      Choice("--kv-cache-dtype", {"auto", "fp8_e5m2", "fp8_e4m3"}),
      F("--enable-fp32-lm-head", kNone),
      // Memory and scheduling.
      F("--mem-fraction-static", kFloat),
      F("--max-running-requests", kInt),
      F("--max-queued-requests", kInt),
      F("--max-total-tokens", kInt),
      F("--chunked-prefill-size", kInt),
      F("--max-prefill-tokens", kInt),
      Choice("--schedule-policy", {"lpm", "random", "fcfs", "dfs-weight", "lof", "priority"}),
      F("--enable-priority-scheduling", kNone),
      F("--schedule-low-priority-values-first", kNone),
      F("--priority-scheduling-preemption-threshold", kInt),
      F("--schedule-conservativeness", kFloat),
      F("--page-size", kInt),
      F("--hybrid-kvcache-ratio", kFloat),
      F("--swa-full-tokens-ratio", kFloat),
      F("--disable-hybrid-swa-memory", kNone),
      // Runtime options.
      F("--device", kStr),
      F("--elastic-ep-backend", kStr),
      F("--mooncake-ib-device", kStr),
      F("--tp-size", kInt, {"--tensor-parallel-size"}),
      F("--pp-size", kInt, {"--pipeline-parallel-size"}),
      F("--pp-max-micro-batch-size", kInt),
      F("--stream-interval", kInt),
      F("--stream-output", kNone),
      F("--random-seed", kInt),
      F("--constrained-json-whitespace-pattern", kStr),
      F("--constrained-json-disable-any-whitespace", kNone),
      F("--watchdog-timeout", kFloat),
      F("--dist-timeout", kInt),
      F("--download-dir", kStr),
      F("--base-gpu-id", kInt),
      F("--gpu-id-step", kInt),
      F("--sleep-on-idle", kNone),
      F("--mm-process-config", kJson),
      // Logging.
      F("--log-level", kStr),
      F("--log-level-http", kStr),
      F("--log-requests", kNone),
      Choice("--log-requests-level", {"0", "1", "2", "3"}),
      F("--crash-dump-folder", kStr),
      F("--crash-on-nan", kStr),
      F("--show-time-cost", kNone),
      F("--enable-metrics", kNone),
      F("--enable-metrics-for-all-schedulers", kNone),
      F("--tokenizer-metrics-custom-labels-header", kStr),
      F("--tokenizer-metrics-allowed-custom-labels", kList),
      F("--bucket-time-to-first-token", kList),
      F("--bucket-inter-token-latency", kList),
      F("--bucket-e2e-request-latency", kList),
      F("--collect-tokens-histogram", kNone),
      F("--prompt-tokens-buckets", kList),
      F("--generation-tokens-buckets", kList),
      F("--gc-warning-threshold-secs", kFloat),
      F("--decode-log-interval", kInt),
      F("--enable-request-time-stats-logging", kNone),
      F("--kv-events-config", kStr),
      F("--enable-trace", kNone),
      F("--oltp-traces-endpoint", kStr),
      // API related.
      F("--api-key", kStr),
      F("--served-model-name", kStr),
      F("--weight-version", kStr),
      F("--chat-template", kStr),
      F("--completion-template", kStr),
      F("--file-storage-path", kStr),
      F("--enable-cache-report", kNone),
      F("--reasoning-parser", kStr),
      F("--tool-call-parser", kStr),
      Choice("--sampling-defaults", {"openai", "model"}),
      F("--tool-server", kStr),
      // Data parallelism.
      F("--dp-size", kInt, {"--data-parallel-size"}),
      Choice("--load-balance-method", {"round_robin", "shortest_queue", "minimum_tokens"}),
      F("--load-watch-interval", kFloat),
      F("--prefill-round-robin-balance", kNone),
      // Multi-node distributed serving.
      F("--dist-init-addr", kStr, {"--nccl-init-addr"}),
      F("--nnodes", kInt),
      F("--node-rank", kInt),
      // Model override args.
      F("--json-model-override-args", kStr),
      F("--preferred-sampling-params", kStr),
      // LoRA.
      F("--enable-lora", kNone),
      F("--max-lora-rank", kInt),
      FlagSpec{"--lora-target-modules",
               FlagValue::kList,
               {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
                "qkv_proj", "gate_up_proj", "all"}},
      F("--lora-paths", kList),
      F("--max-loras-per-batch", kInt),
      F("--max-loaded-loras", kInt),
      Choice("--lora-eviction-policy", {"lru", "fifo"}),
      Choice("--lora-backend", {"triton", "csgmv"}),
      Choice("--max-lora-chunk-size", {"16", "32", "64", "128"}),
      // Kernel backends.
      Choice("--attention-backend", AttentionBackends()),
      Choice("--prefill-attention-backend", AttentionBackends()),
      Choice("--decode-attention-backend", AttentionBackends()),
      Choice("--sampling-backend", {"flashinfer", "pytorch", "ascend"}),
      Choice("--grammar-backend", {"xgrammar", "outlines", "llguidance", "none"}),
      Choice("--mm-attention-backend", {"sdpa", "fa3", "triton_attn", "ascend_attn", "aiter_attn"}),
      Choice("--nsa-prefill", {"flashmla_sparse", "flashmla_decode", "fa3", "tilelang", "aiter"}),
      Choice("--nsa-decode", {"flashmla_prefill", "flashmla_kv", "fa3", "tilelang", "aiter"}),
      Choice("--fp8-gemm-backend",
             {"auto", "deep_gemm", "flashinfer_trtllm", "cutlass", "triton", "aiter"}),
      // Speculative decoding.
      Choice("--speculative-algorithm", {"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"}),
      F("--speculative-draft-model-path", kStr, {"--speculative-draft-model"}),
      F("--speculative-draft-model-revision", kStr),
      F("--speculative-num-steps", kInt),
      F("--speculative-eagle-topk", kInt),
      F("--speculative-num-draft-tokens", kInt),
      F("--speculative-accept-threshold-single", kFloat),
      F("--speculative-accept-threshold-acc", kFloat),
      F("--speculative-token-map", kStr),
      Choice("--speculative-attention-mode", {"prefill", "decode"}),
      F("--speculative-moe-runner-backend", kStr),
      F("--speculative-moe-a2a-backend", kStr),
      F("--speculative-ngram-min-match-window-size", kInt),
      F("--speculative-ngram-max-match-window-size", kInt),
      F("--speculative-ngram-min-bfs-breadth", kInt),
      F("--speculative-ngram-max-bfs-breadth", kInt),
      Choice("--speculative-ngram-match-type", {"BFS", "PROB"}),
      F("--speculative-ngram-branch-length", kInt),
      F("--speculative-ngram-capacity", kInt),
      // MoE.
      F("--ep-size", kInt, {"--expert-parallel-size", "--ep"}),
      Choice("--moe-a2a-backend", {"none", "deepep", "mooncake", "ascend_fuseep"}),
      Choice("--moe-runner-backend",
             {"auto", "deep_gemm", "triton", "triton_kernel", "flashinfer_trtllm",
              "flashinfer_cutlass", "flashinfer_mxfp4", "flashinfer_cutedsl"}),
      Choice("--flashinfer-mxfp4-moe-precision", {"default", "bf16"}),
      F("--enable-flashinfer-allreduce-fusion", kNone),
      Choice("--deepep-mode", {"normal", "low_latency", "auto"}),
      F("--ep-num-redundant-experts", kInt),
      F("--ep-dispatch-algorithm", kStr),
      F("--init-expert-location", kStr),
      F("--enable-eplb", kNone),
      F("--eplb-algorithm", kStr),
      F("--eplb-rebalance-num-iterations", kInt),
      F("--eplb-rebalance-layers-per-chunk", kInt),
      F("--eplb-min-rebalancing-utilization-threshold", kFloat),
      F("--expert-distribution-recorder-mode", kStr),
      F("--expert-distribution-recorder-buffer-size", kInt),
      F("--enable-expert-distribution-metrics", kNone),
      F("--deepep-config", kStr),
      F("--moe-dense-tp-size", kInt),
      // Mamba cache.
      F("--max-mamba-cache-size", kInt),
      Choice("--mamba-ssm-dtype", {"float32", "bfloat16"}),
      F("--mamba-full-memory-ratio", kFloat),
      // Multi-item scoring.
      F("--multi-item-scoring-delimiter", kInt),
      // Hierarchical cache.
      F("--enable-hierarchical-cache", kNone),
      F("--hicache-ratio", kFloat),
      F("--hicache-size", kInt),
      Choice("--hicache-write-policy", {"write_back", "write_through", "write_through_selective"}),
      Choice("--radix-eviction-policy", {"lru", "lfu"}),
      Choice("--hicache-io-backend", {"direct", "kernel", "kernel_ascend"}),
      Choice("--hicache-mem-layout",
             {"layer_first", "page_first", "page_first_direct", "page_first_kv_split"}),
      Choice("--hicache-storage-backend",
             {"file", "mooncake", "hf3fs", "nixl", "aibrix", "dynamic", "eic"}),
      Choice("--hicache-storage-prefetch-policy", {"best_effort", "wait_complete", "timeout"}),
      F("--hicache-storage-backend-extra-config", kStr),
      // LMCache.
      F("--enable-lmcache", kNone),
      // Double sparsity.
      F("--enable-double-sparsity", kNone),
      F("--ds-channel-config-path", kStr),
      F("--ds-heavy-channel-num", kInt),
      F("--ds-heavy-token-num", kInt),
      F("--ds-heavy-channel-type", kStr),
      F("--ds-sparse-decode-threshold", kInt),
      // Offloading.
      F("--cpu-offload-gb", kInt),
      F("--offload-group-size", kInt),
      F("--offload-num-in-group", kInt),
      F("--offload-prefetch-step", kInt),
      F("--offload-mode", kStr),
      // Optimization / debug.
      F("--disable-radix-cache", kNone),
      F("--cuda-graph-max-bs", kInt),
      F("--cuda-graph-bs", kList),
      F("--disable-cuda-graph", kNone),
      F("--disable-cuda-graph-padding", kNone),
      F("--enable-profile-cuda-graph", kNone),
      F("--enable-cudagraph-gc", kNone),
      F("--enable-nccl-nvls", kNone),
      F("--enable-symm-mem", kNone),
      F("--disable-flashinfer-cutlass-moe-fp4-allgather", kNone),
      F("--enable-tokenizer-batch-encode", kNone),
      F("--disable-outlines-disk-cache", kNone),
      F("--disable-custom-all-reduce", kNone),
      F("--enable-mscclpp", kNone),
      F("--enable-torch-symm-mem", kNone),
      F("--disable-overlap-schedule", kNone),
      F("--enable-mixed-chunk", kNone),
      F("--enable-dp-attention", kNone),
      F("--enable-dp-lm-head", kNone),
      F("--enable-two-batch-overlap", kNone),
      F("--enable-single-batch-overlap", kNone),
      F("--tbo-token-distribution-threshold", kFloat),
      F("--enable-torch-compile", kNone),
      F("--enable-torch-compile-debug-mode", kNone),
      F("--enable-piecewise-cuda-graph", kNone),
      F("--piecewise-cuda-graph-tokens", kJson),
      F("--torch-compile-max-bs", kInt),
      F("--piecewise-cuda-graph-max-tokens", kInt),
      F("--torchao-config", kStr),
      F("--enable-nan-detection", kNone),
      F("--enable-p2p-check", kNone),
      F("--triton-attention-reduce-in-fp32", kNone),
      F("--triton-attention-num-kv-splits", kInt),
      F("--triton-attention-split-tile-size", kInt),
      F("--num-continuous-decode-steps", kInt),
      F("--delete-ckpt-after-loading", kNone),
      F("--enable-memory-saver", kNone),
      F("--enable-weights-cpu-backup", kNone),
      F("--allow-auto-truncate", kNone),
      F("--enable-custom-logit-processor", kNone),
      F("--flashinfer-mla-disable-ragged", kNone),
      F("--disable-shared-experts-fusion", kNone),
      F("--disable-chunked-prefix-cache", kNone),
      F("--disable-fast-image-processor", kNone),
      F("--keep-mm-feature-on-device", kNone),
      F("--enable-return-hidden-states", kNone),
      F("--scheduler-recv-interval", kInt),
      F("--numa-node", kList),
      F("--enable-layerwise-nvtx-marker", kNone),
      F("--enable-attn-tp-input-scattered", kNone),
      F("--enable-nsa-prefill-context-parallel", kNone),
      // Forward hooks.
      F("--forward-hooks", kJson),
      // Debug tensor dumps.
      F("--debug-tensor-dump-output-folder", kStr),
      F("--debug-tensor-dump-input-file", kStr),
      F("--debug-tensor-dump-inject", kStr),
      F("--enable-dynamic-batch-tokenizer", kNone),
      F("--dynamic-batch-tokenizer-batch-size", kInt),
      F("--dynamic-batch-tokenizer-batch-timeout", kFloat),
      // PD disaggregation.
      Choice("--disaggregation-mode", {"null", "prefill", "decode"}),
      Choice("--disaggregation-transfer-backend", {"mooncake", "nixl", "ascend", "fake"}),
      F("--disaggregation-bootstrap-port", kInt),
      F("--disaggregation-decode-tp", kInt),
      F("--disaggregation-decode-dp", kInt),
      F("--disaggregation-prefill-pp", kInt),
      F("--disaggregation-ib-device", kStr),
      F("--disaggregation-decode-enable-offload-kvcache", kNone),
      F("--num-reserved-decode-tokens", kInt),
      F("--disaggregation-decode-polling-interval", kInt),
      // Custom weight loader.
      F("--custom-weight-loader", kList),
      F("--weight-loader-disable-mmap", kNone),
      F("--remote-instance-weight-loader-seed-instance-ip", kStr),
      F("--remote-instance-weight-loader-seed-instance-service-port", kInt),
      F("--remote-instance-weight-loader-send-weights-group-ports", kJson),
      // PD-Multiplexing.
      F("--enable-pdmux", kNone),
      F("--pdmux-config-path", kStr),
      F("--sm-group-num", kInt),
      // Deterministic inference.
      F("--enable-deterministic-inference", kNone),
      // Deprecated (DeprecatedAction: accepted, no value, warn/raise at parse).
      F("--enable-ep-moe", kNone),
      F("--enable-deepep-moe", kNone),
      F("--enable-flashinfer-cutlass-moe", kNone),
      F("--enable-flashinfer-cutedsl-moe", kNone),
      F("--enable-flashinfer-trtllm-moe", kNone),
      F("--enable-triton-kernel-moe", kNone),
      F("--enable-flashinfer-mxfp4-moe", kNone),
      // Config file.
      F("--config", kStr),
  };
}

}  // namespace

const FlagTable& SglangLaunchServer055() {
  static const FlagTable* const table = new FlagTable{
      .tool = "sglang launch_server",
      .version = "0.5.5",
      .source =
          "sgl-project/sglang docs/advanced_features/server_arguments.md @b36e8e198b71 "
          "(ServerArgs.add_cli_args of python/sglang/srt/server_args.py)",
      .flags = Flags(),
      .positionals = 0,
  };
  return *table;
}

}  // namespace servelab::engines::flag_tables
