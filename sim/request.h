// Parsing and validation of OpenAI-style generation requests
// (/v1/completions and /v1/chat/completions) into what the sim models.
//
//   absl::StatusOr<GenerationRequest> r = ParseGenerationRequest(json, ApiKind::kCompletion,
//   config);
//
// Errors carry the HTTP meaning in their code: InvalidArgument = 400,
// NotFound = 404 (unknown model). Pure functions; thread-safe.
#ifndef SERVELAB_SIM_REQUEST_H_
#define SERVELAB_SIM_REQUEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/config.h"
#include "sim/json.h"

namespace servelab::sim {

// kGenerate is SGLang's native /generate (served with --compat sglang only).
enum class ApiKind { kCompletion, kChat, kGenerate };

struct GenerationRequest {
  ApiKind kind = ApiKind::kCompletion;
  std::vector<int64_t> prompt_tokens;
  int64_t max_tokens = 16;
  int64_t min_tokens = 0;
  bool ignore_eos = false;
  bool stream = false;
  bool include_usage = false;
  // P/D: kv_transfer_params.do_remote_prefill = true means the prompt's KV
  // comes from a prefill instance (the router sets it on the decode leg).
  bool kv_transferred = false;
  // kv_transfer_params.do_remote_decode = true (or an SGLang bootstrap_room):
  // this is the prefill leg of a P/D request; a decode instance will pull
  // its KV (the instance's lease).
  bool remote_decode = false;
  // kv_transfer_params.remote_cached_tokens: the prefill side's prefix-cache
  // hit, reported as usage cached_tokens on the decode side (-1 = none).
  int64_t remote_cached_tokens = -1;
  // kv_transfer_params.servelab_report_cached_tokens (sim-internal, set by a
  // vllm-ascend router): usage always carries prompt_tokens_details, because
  // that proxy writes P's count into D's usage whatever D reported.
  bool always_report_cached_tokens = false;
  // The OpenAI `user` field; the overlap witness's load tag when no
  // x-servelab-load header arrived (proxies drop client headers). For
  // /generate, the part of `rid` before a '#'.
  std::string user;
  // /generate: the client's request id (meta_info.id), and SGLang's native
  // stream format (cumulative text and counts in meta_info, no usage chunk).
  std::string rid;
  bool stream_native = false;
};

absl::StatusOr<GenerationRequest> ParseGenerationRequest(const JsonValue& body, ApiKind kind,
                                                         const SimConfig& config);
// SGLang's POST /generate body: input_ids or text, sampling_params
// {max_new_tokens, min_new_tokens, ignore_eos}, stream, rid, bootstrap_room.
absl::StatusOr<GenerationRequest> ParseGenerateRequest(const JsonValue& body,
                                                       const SimConfig& config);

// HTTP status for an error from this module (or any absl code).
int HttpStatusFor(const absl::Status& status);
// An OpenAI-style error body: {"error": {"message", "type", "param", "code"}}.
std::string ErrorBody(int http_status, absl::string_view message);

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_REQUEST_H_
