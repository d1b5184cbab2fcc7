// A tiny blocking HTTP/1.1 client for talking to serving instances (on
// loopback, or on a Slurm node's address):
// health, /metrics, cache reset. One request per connection
// (`Connection: close`), plain POSIX sockets, no dependencies — the load
// generator has the real client; this one only needs to be obviously correct.
//
//   absl::StatusOr<HttpResponse> r = HttpGet(8100, "/health", absl::Seconds(1));
//   if (r.ok() && r->status == 200) ...
//   HttpPost(8100, "/reset_prefix_cache", "", absl::Seconds(5));
//
// Errors: UNAVAILABLE when nothing accepts the connection or the peer closes
// it mid-response (the instance is down or restarting); DEADLINE_EXCEEDED
// when the whole exchange does not finish within `timeout`; INTERNAL for a
// response that is not HTTP. Any HTTP status is a successful exchange; callers
// judge the status. Thread-safe (no shared state).
#ifndef SERVELAB_DAEMON_ENGINES_HTTP_CLIENT_H_
#define SERVELAB_DAEMON_ENGINES_HTTP_CLIENT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace servelab::engines {

inline constexpr char kLoopbackHost[] = "127.0.0.1";

struct HttpResponse {
  int status = 0;
  std::string body;
};

// On 127.0.0.1.
absl::StatusOr<HttpResponse> HttpGet(int port, absl::string_view path, absl::Duration timeout);
// On `host`: an IPv4 address or a name resolved to one (UNAVAILABLE if not).
absl::StatusOr<HttpResponse> HttpGet(const std::string& host, int port, absl::string_view path,
                                     absl::Duration timeout);

// POST with `Content-Type: application/json` (an empty body is sent as such).
absl::StatusOr<HttpResponse> HttpPost(int port, absl::string_view path, absl::string_view json_body,
                                      absl::Duration timeout);
absl::StatusOr<HttpResponse> HttpPost(const std::string& host, int port, absl::string_view path,
                                      absl::string_view json_body, absl::Duration timeout);

// Parses a complete HTTP/1.1 response (status line, headers, body with
// Content-Length, chunked encoding or read-to-close). Exposed for tests.
absl::StatusOr<HttpResponse> ParseHttpResponse(absl::string_view raw);

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_HTTP_CLIENT_H_
