// What goes on the wire for one load request: the endpoint URL and the
// OpenAI-compatible JSON body (and HTTP/1.1 head) of a streaming request
// with an exact output length.
//
//   SERVELAB_ASSIGN_OR_RETURN(Endpoint ep, ParseEndpoint("http://127.0.0.1:8000"));
//   std::string wire = RenderHttpRequest(ep, v1::API_COMPLETIONS, "m", prompt, "exp-1/formal");
//
// Body: "stream": true, "max_tokens" = the prompt's output tokens,
// "ignore_eos": true (no "min_tokens", see request.cc), "stream_options": {"include_usage": true}.
// A token-id prompt goes as a JSON array to /v1/completions; for /v1/chat/completions (which takes
// text) token ids are rendered as one word per token ("t<id>"), which is exact for servers that
// count whitespace words (servelab-sim) and approximate elsewhere.
//
// Pure functions; thread-compatible.
#ifndef SERVELAB_LOADGEN_REQUEST_H_
#define SERVELAB_LOADGEN_REQUEST_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "loadgen/dataset.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::loadgen {

struct Endpoint {
  std::string host;
  std::string port;
  // Path prefix without a trailing '/', e.g. "" or "/proxy".
  std::string base_path;
  // "host:port", for the Host header and messages.
  std::string authority() const { return host + ":" + port; }
};

// "http://host[:port][/base]". Errors: INVALID_ARGUMENT (https, no host, bad port).
absl::StatusOr<Endpoint> ParseEndpoint(absl::string_view url);

// "/v1/completions", "/v1/chat/completions" or "/generate" under the base path.
std::string RequestPath(const Endpoint& endpoint, v1::Api api);

// `load_tag`, when not empty, also goes in the body's OpenAI `user` field:
// real P/D proxies drop client headers (vLLM's toy_proxy_server.py forwards
// only its own X-Request-Id) but forward the body, so a server can still
// tell which load a request belongs to.
//
// API_GENERATE is SGLang's native body (python/sglang/srt/managers/
// io_struct.py GenerateReqInput): "input_ids" (or "text"), "sampling_params"
// {"max_new_tokens", "ignore_eos"}, "stream", and "rid" = "LOAD_TAG#REQUEST_ID"
// when a tag is given: sgl-router keeps only GenerateRequest's own fields, so
// the tag travels in the request id. No "model": /generate takes none.
std::string RenderBody(v1::Api api, absl::string_view model, const Prompt& prompt,
                       absl::string_view load_tag = "", absl::string_view request_id = "");

// The complete HTTP/1.1 keep-alive request (head and body). `load_tag`, when
// not empty, goes in the x-servelab-load header; `request_id`, when not
// empty, in x-request-id (vLLM and the sim log it, so client and server
// views of one request can be joined).
std::string RenderHttpRequest(const Endpoint& endpoint, v1::Api api, absl::string_view model,
                              const Prompt& prompt, absl::string_view load_tag,
                              absl::string_view request_id = "");

// JSON string literal (with quotes) of `s`.
std::string JsonQuote(absl::string_view s);

}  // namespace servelab::loadgen

#endif  // SERVELAB_LOADGEN_REQUEST_H_
