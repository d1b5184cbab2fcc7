#include "sim/compat.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sim/json.h"

namespace servelab::sim {

absl::StatusOr<Compat> ParseCompat(const std::string& name) {
  if (name == "sim") return Compat::kSim;
  if (name == "vllm") return Compat::kVllm;
  if (name == "vllm-ascend") return Compat::kVllmAscend;
  if (name == "sglang") return Compat::kSglang;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown --compat '", name, "' (want sim, vllm, vllm-ascend or sglang)"));
}

const char* CompatName(Compat compat) {
  switch (compat) {
    case Compat::kSim:
      return "sim";
    case Compat::kVllm:
      return "vllm";
    case Compat::kVllmAscend:
      return "vllm-ascend";
    case Compat::kSglang:
      return "sglang";
  }
  return "?";
}

bool DevModeFromEnvironment() {
  const char* v = std::getenv("VLLM_SERVER_DEV_MODE");
  int parsed = 0;
  return v != nullptr && absl::SimpleAtoi(v, &parsed) && parsed != 0;
}

double DefaultKvLeaseSeconds(Compat compat) {
  // vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py: the
  // prefill side frees a finished request's blocks only once the decode side
  // has read them (or VLLM_NIXL_ABORT_REQUEST_TIMEOUT passes); SGLang keeps
  // the request in disagg_prefill_inflight_queue until the transfer is done
  // (python/sglang/srt/disaggregation/prefill.py). 0.2 s is a typical pull.
  return compat == Compat::kSim ? 0.0 : 0.2;
}

bool ServesResetPrefixCache(const CompatOptions& o) {
  switch (o.compat) {
    case Compat::kSim:
      return true;
    case Compat::kVllm:
    case Compat::kVllmAscend:
      // vllm/entrypoints/openai/api_server.py registers the dev routers
      // (vllm/entrypoints/serve/dev/cache/api_router.py: /reset_prefix_cache)
      // only under `if envs.VLLM_SERVER_DEV_MODE:`.
      return o.dev_mode;
    case Compat::kSglang:
      // python/sglang/srt/entrypoints/http_server.py has /flush_cache instead.
      return false;
  }
  return false;
}

bool ServesFlushCache(const CompatOptions& o) { return o.compat == Compat::kSglang; }

bool ServesMetrics(const CompatOptions& o) {
  // python/sglang/srt/entrypoints/http_server.py mounts /metrics only when
  // server_args.enable_metrics; vLLM always serves it.
  return o.compat != Compat::kSglang || o.enable_metrics;
}

bool ReportsCachedTokens(const CompatOptions& o, int64_t cached) {
  switch (o.compat) {
    case Compat::kSim:
      return true;
    case Compat::kVllm:
    case Compat::kVllmAscend:
      // vllm/entrypoints/openai/serving_completion.py and serving_chat.py:
      // `if self.enable_prompt_tokens_details and num_cached_tokens:`.
      return o.enable_prompt_tokens_details && cached > 0;
    case Compat::kSglang:
      // python/sglang/srt/entrypoints/openai/usage_processor.py: only with
      // enable_cache_report, and _details_if_cached drops a count of 0.
      return o.enable_cache_report && cached > 0;
  }
  return false;
}

int64_t DecodeCachedTokens(const CompatOptions& o, int64_t prompt_tokens, int64_t remote_cached,
                           bool proxy_rewrites, int64_t own_cached) {
  if (IsVllmFamily(o.compat) && !proxy_rewrites) {
    // vllm/v1/core/sched/scheduler.py: num_cached_tokens = num_computed_tokens,
    // which on decode includes the KV loaded from prefill: every prompt token
    // but the last, which decode computes (vllm-project/vllm#43370).
    return std::max<int64_t>(prompt_tokens - 1, 0);
  }
  return remote_cached >= 0 ? remote_cached : own_cached;
}

bool NullPromptTokensDetails(const CompatOptions& o) {
  // vLLM's api_server returns JSONResponse(content=generator.model_dump())
  // for a non-streaming completion, so the unset field is null; streamed
  // usage chunks are dumped with exclude_none and leave it out.
  return IsVllmFamily(o.compat);
}

std::string NotFoundBody(Compat compat, const std::string& path) {
  if (compat == Compat::kSim) {
    return absl::StrCat("{\"error\":{\"message\":", JsonQuote("no route for " + path),
                        ",\"type\":\"NotFoundError\",\"param\":null,\"code\":404}}");
  }
  return "{\"detail\":\"Not Found\"}";  // FastAPI / Starlette default
}

const char* ModelOwner(Compat compat) {
  switch (compat) {
    case Compat::kSim:
      return "servelab";
    case Compat::kVllm:
    case Compat::kVllmAscend:
      return "vllm";
    case Compat::kSglang:
      return "sglang";
  }
  return "servelab";
}

}  // namespace servelab::sim
