// One accepted client connection and the ways the sim answers on it: a whole
// response with Content-Length, or a chunked (streaming) response piece by
// piece. Responses are written by hand rather than with Beast's serializer
// because the streaming hot path writes ~10^5 small chunks per second.
//
// Single-threaded: used only from the coroutine that owns the connection;
// one write at a time. The write functions are plain functions that format
// into members and return the awaitable of the actual write, so arguments
// (often temporaries) are consumed before any suspension — g++ 12 double-frees
// class-type temporaries that live across a co_await. `data` passed to
// WriteChunk/EndChunked must stay valid until the returned awaitable is done.
// The awaitables yield false when the peer has gone (the caller then stops).
#ifndef SERVELAB_SIM_HTTP_CONN_H_
#define SERVELAB_SIM_HTTP_CONN_H_

#include <array>
#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "sim/asio.h"
#include "sim/http_request.h"

namespace servelab::sim {

class ClientConn {
 public:
  explicit ClientConn(tcp::socket socket) : socket_(std::move(socket)) {}

  tcp::socket& socket() { return socket_; }

  // When the next unread byte reached this socket: the kernel's receive
  // stamp (SO_TIMESTAMPNS, set on the listener), on the steady clock. A
  // request arrives then, not when this thread gets to read it: a busy sim
  // reads late, and that wait is the server's time, as the client's TTFT
  // counts it (docs/design.md §10). Now, when there is no unread byte or no
  // stamp. Does not consume the byte.
  std::chrono::steady_clock::time_point NextByteArrival();

  asio::awaitable<bool> WriteResponse(int status, absl::string_view content_type,
                                      absl::string_view body, bool keep_alive);
  asio::awaitable<bool> WriteJson(int status, absl::string_view body, bool keep_alive) {
    return WriteResponse(status, "application/json", body, keep_alive);
  }
  // Status line and headers of a Transfer-Encoding: chunked response.
  asio::awaitable<bool> StartChunked(int status, absl::string_view content_type, bool keep_alive);
  // One HTTP chunk (no-op for empty data).
  asio::awaitable<bool> WriteChunk(absl::string_view data);
  // `data` as a last chunk plus the terminating zero-length chunk, one write.
  asio::awaitable<bool> EndChunked(absl::string_view data);
  // Closes at once (RST), as a crashed server would; the client sees a
  // truncated stream.
  void Abort();

 private:
  // Up to four pieces gathered into one write; unused slots are empty buffers.
  using Buffers = std::array<asio::const_buffer, 4>;
  asio::awaitable<bool> Flush();  // writes buffers_

  tcp::socket socket_;
  std::string header_;  // status line and headers (and small bodies), reused
  char size_line_[24];  // chunk size line, reused
  Buffers buffers_;
};

const char* ReasonPhrase(int status);

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_HTTP_CONN_H_
