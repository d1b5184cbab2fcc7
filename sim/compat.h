// Engine-compatibility profiles (--compat): which real engine's client-visible
// quirks the sim reproduces, so an orchestrator tested against the sim copes
// with the real thing. `sim` is the sim's own behaviour and the default.
//
//   absl::StatusOr<Compat> c = ParseCompat("vllm");
//   CompatOptions options{*c, /*dev_mode=*/DevModeFromEnvironment()};
//   if (!ServesResetPrefixCache(options)) { ...404... }
//
// Each rule names the upstream file it comes from (sim/README.md,
// "Compatibility profiles", lists them all). Pure functions; thread-safe.
#ifndef SERVELAB_SIM_COMPAT_H_
#define SERVELAB_SIM_COMPAT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace servelab::sim {

enum class Compat { kSim, kVllm, kVllmAscend, kSglang };

absl::StatusOr<Compat> ParseCompat(const std::string& name);
const char* CompatName(Compat compat);
// vllm and vllm-ascend share the instance behaviour (vllm-ascend is a vLLM
// platform plugin); they differ only in the router role.
inline bool IsVllmFamily(Compat c) { return c == Compat::kVllm || c == Compat::kVllmAscend; }

// The instance-side switches a profile reads. Constant after start.
struct CompatOptions {
  Compat compat = Compat::kSim;
  // VLLM_SERVER_DEV_MODE=1 in the environment (vllm family only).
  bool dev_mode = false;
  // vLLM --enable-prompt-tokens-details, SGLang --enable-cache-report,
  // SGLang --enable-metrics. Accepted in every profile.
  bool enable_prompt_tokens_details = false;
  bool enable_cache_report = false;
  bool enable_metrics = false;
};

// True when VLLM_SERVER_DEV_MODE parses as a non-zero integer, as vllm/envs.py
// reads it (bool(int(os.getenv("VLLM_SERVER_DEV_MODE", "0")))).
bool DevModeFromEnvironment();

// kv_lease_seconds when the config does not set it: how long a prefill
// instance keeps a remote-decode request's KV blocks after answering.
double DefaultKvLeaseSeconds(Compat compat);

// POST /reset_prefix_cache is registered at all.
bool ServesResetPrefixCache(const CompatOptions& options);
// GET|POST /flush_cache is registered (SGLang only).
bool ServesFlushCache(const CompatOptions& options);
// GET /metrics is served.
bool ServesMetrics(const CompatOptions& options);
// usage.prompt_tokens_details.cached_tokens is reported for `cached` tokens.
bool ReportsCachedTokens(const CompatOptions& options, int64_t cached);
// The cached_tokens a decode instance reports for a request whose KV came from
// prefill: `remote_cached` is prefill's hit (-1: unknown, then `own_cached`),
// `proxy_rewrites` says the proxy puts prefill's count in (vllm-ascend's).
int64_t DecodeCachedTokens(const CompatOptions& options, int64_t prompt_tokens,
                           int64_t remote_cached, bool proxy_rewrites, int64_t own_cached);
// A non-streaming body without cached tokens says "prompt_tokens_details":null
// (pydantic model_dump keeps None fields) instead of leaving the key out.
bool NullPromptTokensDetails(const CompatOptions& options);
// The 404 body of an unknown route (FastAPI's, for the Python engines).
std::string NotFoundBody(Compat compat, const std::string& path);
// "owned_by" in /v1/models.
const char* ModelOwner(Compat compat);

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_COMPAT_H_
