#include "sim/router.h"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "sim/log.h"
#include "sim/request.h"

namespace servelab::sim {
namespace http = boost::beast::http;
namespace beast = boost::beast;

absl::StatusOr<Upstream> ParseUpstreamUrl(const std::string& url) {
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "http://")) {
    return absl::InvalidArgumentError(absl::StrCat("upstream URL '", url, "' must start with http://"));
  }
  rest = rest.substr(0, rest.find('/'));
  size_t colon = rest.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("upstream URL '", url, "' needs a port"));
  }
  std::string host(rest.substr(0, colon));
  int port = 0;
  if (!absl::SimpleAtoi(rest.substr(colon + 1), &port) || port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("upstream URL '", url, "' has a bad port"));
  }
  std::string address = host == "localhost" ? "127.0.0.1" : host;
  if (address.size() > 2 && address.front() == '[') address = address.substr(1, address.size() - 2);
  boost::system::error_code ec;
  asio::ip::address ip = asio::ip::make_address(address, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("upstream host '", host, "' is not an IP address"));
  if (!ip.is_loopback()) {
    return absl::InvalidArgumentError(
        absl::StrCat("upstream host '", host, "' is not loopback; the sim only talks to 127.0.0.1"));
  }
  return Upstream{host, tcp::endpoint(ip, static_cast<unsigned short>(port))};
}

absl::StatusOr<std::unique_ptr<Router>> Router::Create(const std::string& prefill_url,
                                                       const std::string& decode_url) {
  absl::StatusOr<Upstream> p = ParseUpstreamUrl(prefill_url);
  if (!p.ok()) return p.status();
  absl::StatusOr<Upstream> d = ParseUpstreamUrl(decode_url);
  if (!d.ok()) return d.status();
  return std::unique_ptr<Router>(new Router(*std::move(p), *std::move(d)));
}

namespace {

using RequestHeaders = std::vector<std::pair<std::string, std::string>>;

http::request<http::string_body> MakeRequest(const Upstream& up, http::verb verb,
                                             const std::string& path, const std::string& body,
                                             const RequestHeaders& headers) {
  http::request<http::string_body> req(verb, path, 11);
  req.set(http::field::host, up.host);
  req.set(http::field::connection, "close");
  for (const auto& [k, v] : headers) {
    if (!v.empty()) req.set(k, v);
  }
  if (verb == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  return req;
}

struct FetchResult {
  bool connected = false;
  int status = 0;
  std::string body;
};

// One request/response on a fresh connection. `connected` false = unreachable.
// Arguments are references to the caller's named objects: g++ 12 double-frees
// class-type temporaries passed into a coroutine inside a co_await expression.
asio::awaitable<FetchResult> Fetch(const Upstream& up, http::verb verb, const std::string& path,
                                   const std::string& body, const RequestHeaders& headers) {
  FetchResult result;
  tcp::socket socket(co_await asio::this_coro::executor);
  boost::system::error_code ec;
  co_await socket.async_connect(up.endpoint, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return result;
  auto req = MakeRequest(up, verb, path, body, headers);
  co_await http::async_write(socket, req, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return result;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<uint64_t>::max());
  co_await http::async_read(socket, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return result;
  result.connected = true;
  result.status = static_cast<int>(parser.get().result_int());
  result.body = std::move(parser.get().body());
  co_return result;
}

int64_t CachedTokensOf(const std::string& response_body) {
  absl::StatusOr<JsonValue> v = ParseJson(response_body);
  if (!v.ok()) return -1;
  const JsonValue* usage = v->Find("usage");
  const JsonValue* details = usage ? usage->Find("prompt_tokens_details") : nullptr;
  const JsonValue* cached = details ? details->Find("cached_tokens") : nullptr;
  return cached && cached->is_integer() ? cached->int_value() : -1;
}

}  // namespace

asio::awaitable<bool> Router::ServeGeneration(ClientConn& conn, Engine& engine,
                                              const IncomingRequest& request,
                                              const JsonValue& body, GenerationRequest& parsed) {
  RequestMeta meta{request.request_id, request.load_tag};
  std::unique_ptr<RequestState> r = engine.Arrive(std::move(parsed), std::move(meta));
  if (r->fault == FaultAction::kError) {
    bool ok = co_await conn.WriteJson(
        r->error_status, ErrorBody(r->error_status, "injected fault: error"), request.keep_alive);
    engine.Finish(*r, Outcome::kError, r->error_status);
    co_return ok;
  }
  if (r->fault == FaultAction::kHang) {
    char byte;
    boost::system::error_code ec;
    co_await conn.socket().async_read_some(asio::buffer(&byte, 1),
                                           asio::redirect_error(asio::use_awaitable, ec));
    engine.Finish(*r, Outcome::kAborted, 0);
    co_return false;
  }
  RequestHeaders headers = {{"x-request-id", request.request_id},
                            {"x-servelab-load", request.load_tag}};
  auto fail = [&](int status, absl::string_view message) -> asio::awaitable<bool> {
    bool ok = co_await conn.WriteJson(status, ErrorBody(status, message), request.keep_alive);
    engine.Finish(*r, Outcome::kError, status);
    co_return ok;
  };

  // Prefill leg.
  JsonValue prefill_body = body;
  JsonValue one = JsonValue::Number(1, true), no = JsonValue::Bool(false);
  prefill_body.Set("max_tokens", &one);
  prefill_body.Set("max_completion_tokens", nullptr);
  prefill_body.Set("min_tokens", nullptr);
  prefill_body.Set("stream", &no);
  prefill_body.Set("stream_options", nullptr);
  JsonValue remote_decode =
      JsonValue::Object({{"do_remote_decode", JsonValue::Bool(true)}});
  prefill_body.Set("kv_transfer_params", &remote_decode);
  const std::string prefill_json = ToJson(prefill_body);
  FetchResult prefill =
      co_await Fetch(prefill_, http::verb::post, request.path, prefill_json, headers);
  if (!prefill.connected) co_return co_await fail(502, "prefill instance unreachable");
  if (prefill.status != 200) {
    bool ok = co_await conn.WriteJson(prefill.status, prefill.body, request.keep_alive);
    engine.Finish(*r, Outcome::kError, prefill.status);
    co_return ok;
  }

  // Decode leg, relayed piece by piece.
  JsonValue decode_body = body;
  JsonValue remote_prefill = JsonValue::Object(
      {{"do_remote_prefill", JsonValue::Bool(true)},
       {"remote_cached_tokens",
        JsonValue::Number(static_cast<double>(std::max<int64_t>(CachedTokensOf(prefill.body), 0)),
                          true)}});
  decode_body.Set("kv_transfer_params", &remote_prefill);
  tcp::socket upstream(co_await asio::this_coro::executor);
  boost::system::error_code ec;
  co_await upstream.async_connect(decode_.endpoint, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return co_await fail(502, "decode instance unreachable");
  auto req = MakeRequest(decode_, http::verb::post, request.path, ToJson(decode_body), headers);
  co_await http::async_write(upstream, req, asio::redirect_error(asio::use_awaitable, ec));
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<uint64_t>::max());
  if (!ec) {
    co_await http::async_read_header(upstream, buffer, parser,
                                     asio::redirect_error(asio::use_awaitable, ec));
  }
  if (ec) co_return co_await fail(502, "decode instance failed before answering");
  int status = static_cast<int>(parser.get().result_int());
  std::string content_type(parser.get()[http::field::content_type]);
  if (content_type.empty()) content_type = "application/json";
  if (!co_await conn.StartChunked(status, content_type, request.keep_alive)) {
    engine.Finish(*r, Outcome::kAborted, status);
    co_return false;
  }
  char piece[16384];
  bool first = true;
  while (!parser.is_done()) {
    parser.get().body().data = piece;
    parser.get().body().size = sizeof(piece);
    co_await http::async_read_some(upstream, buffer, parser,
                                   asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) {
      // D dropped the stream: pass the truncation on rather than ending cleanly.
      conn.Abort();
      engine.Finish(*r, Outcome::kDropped, status);
      co_return false;
    }
    size_t n = sizeof(piece) - parser.get().body().size;
    if (n == 0) continue;
    if (!co_await conn.WriteChunk(absl::string_view(piece, n))) {
      engine.Finish(*r, Outcome::kAborted, status);
      co_return false;
    }
    if (first && status == 200) engine.OnToken(*r);
    first = false;
  }
  bool ok = co_await conn.EndChunked("");
  engine.Finish(*r, !ok ? Outcome::kAborted : status == 200 ? Outcome::kSuccess : Outcome::kError,
                status);
  co_return ok;
}

namespace {
const std::string kNoBody;
const RequestHeaders kNoHeaders;
const std::string kHealthPath = "/health";
const std::string kResetPath = "/reset_prefix_cache";
const std::string kModelsPath = "/v1/models";
}  // namespace

asio::awaitable<bool> Router::UpstreamsHealthy() {
  FetchResult p = co_await Fetch(prefill_, http::verb::get, kHealthPath, kNoBody, kNoHeaders);
  FetchResult d = co_await Fetch(decode_, http::verb::get, kHealthPath, kNoBody, kNoHeaders);
  co_return p.status == 200 && d.status == 200;
}

asio::awaitable<bool> Router::ResetPrefixCaches() {
  FetchResult p = co_await Fetch(prefill_, http::verb::post, kResetPath, kNoBody, kNoHeaders);
  FetchResult d = co_await Fetch(decode_, http::verb::post, kResetPath, kNoBody, kNoHeaders);
  co_return p.status == 200 && d.status == 200;
}

asio::awaitable<std::pair<int, std::string>> Router::Models() {
  FetchResult d = co_await Fetch(decode_, http::verb::get, kModelsPath, kNoBody, kNoHeaders);
  if (!d.connected) co_return std::make_pair(502, ErrorBody(502, "decode instance unreachable"));
  co_return std::make_pair(d.status, d.body);
}

}  // namespace servelab::sim
