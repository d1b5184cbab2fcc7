// One HTTP request as the sim's handlers see it, and its extraction from the
// message Beast parsed off the socket (Server::Session). Kept apart from the
// connection so the request path can be fuzzed without a socket (fuzz/).
//
//   HttpRequestParser parser;
//   parser.body_limit(max_body_bytes);
//   ... http::async_read(socket, buffer, parser) ...
//   IncomingRequest request = ToIncomingRequest(parser.get());
//
// Pure; thread-compatible.
#ifndef SERVELAB_SIM_HTTP_REQUEST_H_
#define SERVELAB_SIM_HTTP_REQUEST_H_

// <utility> must come first (sim/asio.h says why), so clang-format must not
// sort these.
// clang-format off
#include <utility>

#include <boost/beast/http.hpp>
// clang-format on
#include <chrono>
#include <string>

namespace servelab::sim {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpRequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// What the handlers need from a parsed HTTP request.
struct IncomingRequest {
  std::string method;
  std::string path;   // without the query string
  std::string query;  // after '?', may be empty
  std::string body;
  std::string request_id;  // x-request-id
  std::string load_tag;    // x-servelab-load
  bool keep_alive = true;
  // When its first byte was read (set by the server's read loop).
  std::chrono::steady_clock::time_point received{};
};

// Moves `message`'s body into the result.
IncomingRequest ToIncomingRequest(HttpRequest& message);

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_HTTP_REQUEST_H_
