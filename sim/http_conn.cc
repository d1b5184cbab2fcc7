#include "sim/http_conn.h"

#include <sys/socket.h>

#include <boost/beast/core/buffers_suffix.hpp>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/receive_stamp.h"

namespace servelab::sim {

namespace {
constexpr absl::string_view kCrlf = "\r\n";
constexpr absl::string_view kLast = "0\r\n\r\n";

// Writes a chunk's size line ("<hex>\r\n") to `out`, which holds at least
// 18 bytes, and returns its length. By hand: snprintf was 1-2 % of the sim's
// core at a chunk per token (docs/design.md §10, "The sim's locks").
int ChunkSizeLine(size_t size, char* out) {
  char digits[16];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[size & 0xF];
    size >>= 4;
  } while (size != 0);
  int length = 0;
  while (n > 0) out[length++] = digits[--n];
  out[length++] = '\r';
  out[length++] = '\n';
  return length;
}
}  // namespace

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Status";
  }
}

asio::awaitable<bool> ClientConn::Flush() {
  // Most writes fit the socket's send buffer: one non-blocking send does
  // them, and the coroutine goes on without a trip through the scheduler
  // (docs/design.md §10, "The sim's write path"). Only what the send buffer
  // could not take waits for the socket.
  boost::system::error_code ec;
  if (!socket_.non_blocking()) socket_.non_blocking(true, ec);
  size_t sent = ec ? 0 : socket_.write_some(buffers_, ec);
  if (ec && ec != asio::error::would_block) co_return false;
  if (sent == asio::buffer_size(buffers_)) co_return true;
  boost::beast::buffers_suffix<Buffers> rest(buffers_);
  rest.consume(sent);
  ec = {};
  co_await asio::async_write(socket_, rest, asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec;
}

asio::awaitable<bool> ClientConn::WriteResponse(int status, absl::string_view content_type,
                                                absl::string_view body, bool keep_alive) {
  header_ = absl::StrCat("HTTP/1.1 ", status, " ", ReasonPhrase(status),
                         "\r\nContent-Type: ", content_type, "\r\nContent-Length: ", body.size(),
                         keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
  header_.append(body.data(), body.size());
  buffers_ = Buffers{asio::buffer(header_)};
  return Flush();
}

asio::awaitable<bool> ClientConn::StartChunked(int status, absl::string_view content_type,
                                               bool keep_alive) {
  header_ = absl::StrCat("HTTP/1.1 ", status, " ", ReasonPhrase(status),
                         "\r\nContent-Type: ", content_type,
                         "\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked",
                         keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
  buffers_ = Buffers{asio::buffer(header_)};
  return Flush();
}

asio::awaitable<bool> ClientConn::WriteChunk(absl::string_view data) {
  if (data.empty()) {
    buffers_ = Buffers{};
    return Flush();
  }
  const int n = ChunkSizeLine(data.size(), size_line_);
  buffers_ = Buffers{asio::buffer(size_line_, n), asio::buffer(data.data(), data.size()),
                     asio::buffer(kCrlf.data(), kCrlf.size())};
  return Flush();
}

asio::awaitable<bool> ClientConn::EndChunked(absl::string_view data) {
  if (data.empty()) {
    buffers_ = Buffers{asio::buffer(kLast.data(), kLast.size())};
    return Flush();
  }
  const int n = ChunkSizeLine(data.size(), size_line_);
  buffers_ =
      Buffers{asio::buffer(size_line_, n), asio::buffer(data.data(), data.size()),
              asio::buffer(kCrlf.data(), kCrlf.size()), asio::buffer(kLast.data(), kLast.size())};
  return Flush();
}

std::chrono::steady_clock::time_point ClientConn::NextByteArrival() {
  char byte;
  return ReceiveStamped(socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT).received;
}

void ClientConn::Abort() {
  boost::system::error_code ec;
  socket_.set_option(asio::socket_base::linger(true, 0), ec);
  socket_.close(ec);
}

}  // namespace servelab::sim
