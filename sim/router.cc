#include "sim/router.h"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdlib>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "sim/generation.h"
#include "sim/log.h"
#include "sim/request.h"

namespace servelab::sim {
namespace http = boost::beast::http;
namespace beast = boost::beast;

absl::StatusOr<Upstream> ParseUpstreamUrl(const std::string& url) {
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "http://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("upstream URL '", url, "' must start with http://"));
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
  if (ec)
    return absl::InvalidArgumentError(
        absl::StrCat("upstream host '", host, "' is not an IP address"));
  if (!ip.is_loopback()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "upstream host '", host, "' is not loopback; the sim only talks to 127.0.0.1"));
  }
  return Upstream{host, tcp::endpoint(ip, static_cast<unsigned short>(port)), url};
}

Router::Router(std::vector<Upstream> prefill, std::vector<Upstream> decode, Compat compat)
    : prefill_(std::move(prefill)),
      decode_(std::move(decode)),
      compat_(compat),
      prefill_load_(prefill_.size(), 0.0),
      decode_load_(decode_.size(), 0.0),
      ids_(std::random_device{}()) {}

absl::StatusOr<std::unique_ptr<Router>> Router::Create(const std::vector<std::string>& prefill_urls,
                                                       const std::vector<std::string>& decode_urls,
                                                       Compat compat) {
  if (prefill_urls.empty() || decode_urls.empty()) {
    return absl::InvalidArgumentError("the router needs at least one prefill and one decode URL");
  }
  std::vector<Upstream> prefill, decode;
  for (const std::string& url : prefill_urls) {
    absl::StatusOr<Upstream> u = ParseUpstreamUrl(url);
    if (!u.ok()) return u.status();
    prefill.push_back(*std::move(u));
  }
  for (const std::string& url : decode_urls) {
    absl::StatusOr<Upstream> u = ParseUpstreamUrl(url);
    if (!u.ok()) return u.status();
    decode.push_back(*std::move(u));
  }
  return std::unique_ptr<Router>(new Router(std::move(prefill), std::move(decode), compat));
}

size_t Router::Pick(bool prefill, double load) {
  absl::MutexLock lock(&mu_);
  std::vector<double>& loads = prefill ? prefill_load_ : decode_load_;
  size_t pick = 0;
  if (compat_ == Compat::kVllmAscend) {
    // load_balance_proxy_server_example.py SharedProxyScheduler: a min-heap
    // on (priority, ordinal) -- the least loaded, the first listed on ties.
    // P's priority is its reserved KV score, D's its active tokens.
    for (size_t i = 1; i < loads.size(); ++i) {
      if (loads[i] < loads[pick]) pick = i;
    }
  } else {
    // toy_proxy_server.py: itertools.cycle over the instances.
    size_t& next = prefill ? next_prefill_ : next_decode_;
    pick = next++ % loads.size();
  }
  loads[pick] += load;
  return pick;
}

void Router::Release(bool prefill, size_t index, double load) {
  absl::MutexLock lock(&mu_);
  std::vector<double>& loads = prefill ? prefill_load_ : decode_load_;
  loads[index] = std::max(0.0, loads[index] - load);
}

std::string Router::FreshRequestId() {
  // A version-4 UUID, as the proxies' str(uuid.uuid4()).
  uint64_t hi, lo;
  {
    absl::MutexLock lock(&mu_);
    hi = ids_();
    lo = ids_();
  }
  hi = (hi & ~0xF000ull) | 0x4000ull;
  lo = (lo & ~(0xC000ull << 48)) | (0x8000ull << 48);
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF,
                         lo >> 48, lo & 0xFFFFFFFFFFFFull);
}

uint64_t Router::FreshBootstrapRoom() {
  absl::MutexLock lock(&mu_);
  return ids_() >> 11;
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
  if (const JsonValue* meta = v->Find("meta_info"); meta != nullptr) {
    cached = meta->Find("cached_tokens");  // SGLang's /generate answer
  }
  return cached && cached->is_integer() ? cached->int_value() : -1;
}

// sgl-router PD mode injects the prefill's bootstrap address and a random
// room into both legs (pd_router.rs); the sim ignores them.
struct SglangBootstrap {
  JsonValue host = JsonValue::String("127.0.0.1");
  JsonValue port = JsonValue::Number(8998, true);
  JsonValue room;
};

void AddBootstrap(const SglangBootstrap& bootstrap, JsonValue& leg_body) {
  leg_body.Set("bootstrap_host", &bootstrap.host);
  leg_body.Set("bootstrap_port", &bootstrap.port);
  leg_body.Set("bootstrap_room", &bootstrap.room);
}

// The prefill leg of SGLang's /generate. sgl-router sends both servers the
// same body; the sim cuts its prefill leg to one token, as SGLang's prefill
// server generates only that one.
JsonValue NativePrefillBody(const JsonValue& body) {
  JsonValue prefill_body = body;
  JsonValue one = JsonValue::Number(1, true), no = JsonValue::Bool(false);
  const JsonValue* given = body.Find("sampling_params");
  JsonValue sampling = given != nullptr && given->is_object()
                           ? *given
                           : JsonValue::Object({{"max_new_tokens", one}});
  sampling.Set("max_new_tokens", &one);
  sampling.Set("min_new_tokens", nullptr);
  prefill_body.Set("sampling_params", &sampling);
  prefill_body.Set("stream", &no);
  JsonValue remote_decode = JsonValue::Object({{"do_remote_decode", JsonValue::Bool(true)}});
  prefill_body.Set("kv_transfer_params", &remote_decode);
  return prefill_body;
}

// The prefill leg: the client's body cut to one token, non-streaming, with
// kv_transfer_params asking P to keep the KV for a remote decode.
JsonValue PrefillBody(Compat compat, const JsonValue& body) {
  const bool vllm_family = IsVllmFamily(compat);
  JsonValue prefill_body = body;
  JsonValue one = JsonValue::Number(1, true), no = JsonValue::Bool(false), null;
  prefill_body.Set("max_tokens", &one);
  if (vllm_family) {
    // toy_proxy_server.py send_request_to_service: max_completion_tokens 1
    // if present, min_tokens popped; the vllm-ascend proxy sets min_tokens 1.
    if (body.Find("max_completion_tokens") != nullptr)
      prefill_body.Set("max_completion_tokens", &one);
    prefill_body.Set("min_tokens", compat == Compat::kVllmAscend ? &one : nullptr);
    prefill_body.Set("min_completion_tokens", nullptr);
  } else {
    prefill_body.Set("max_completion_tokens", nullptr);
    prefill_body.Set("min_tokens", nullptr);
  }
  prefill_body.Set("stream", &no);
  prefill_body.Set("stream_options", nullptr);
  JsonValue remote_decode = vllm_family
                                ? JsonValue::Object({{"do_remote_decode", JsonValue::Bool(true)},
                                                     {"do_remote_prefill", JsonValue::Bool(false)},
                                                     {"remote_engine_id", null},
                                                     {"remote_block_ids", null},
                                                     {"remote_host", null},
                                                     {"remote_port", null}})
                                : JsonValue::Object({{"do_remote_decode", JsonValue::Bool(true)}});
  prefill_body.Set("kv_transfer_params", &remote_decode);
  return prefill_body;
}

// The decode leg: the client's body with the kv_transfer_params the profile's
// proxy gives D, from P's answer `prefill_answer`.
JsonValue DecodeBody(Compat compat, const JsonValue& body, const std::string& prefill_answer) {
  JsonValue decode_body = body;
  absl::StatusOr<JsonValue> parsed_answer = ParseJson(prefill_answer);
  const JsonValue* returned_params =
      parsed_answer.ok() ? parsed_answer->Find("kv_transfer_params") : nullptr;
  JsonValue remote_prefill = JsonValue::Object(
      {{"do_remote_prefill", JsonValue::Bool(true)},
       {"remote_cached_tokens",
        JsonValue::Number(static_cast<double>(std::max<int64_t>(CachedTokensOf(prefill_answer), 0)),
                          true)}});
  JsonValue forwarded_params;
  if (IsVllmFamily(compat) && returned_params != nullptr && returned_params->is_object()) {
    // Both vLLM proxies: req_data["kv_transfer_params"] = P's answer's.
    forwarded_params = *returned_params;
    if (compat == Compat::kVllmAscend) {
      // update_cached_tokens_in_chunk: the proxy writes P's reported
      // cached_tokens (extract_cached_tokens: 0 when P reported none) into
      // every usage D sends, creating prompt_tokens_details if need be. The
      // sim has D do it instead of rewriting the relayed bytes.
      JsonValue reported = JsonValue::Number(
          static_cast<double>(std::max<int64_t>(CachedTokensOf(prefill_answer), 0)), true);
      JsonValue yes = JsonValue::Bool(true);
      forwarded_params.Set("remote_cached_tokens", &reported);
      forwarded_params.Set("servelab_report_cached_tokens", &yes);
    }
    decode_body.Set("kv_transfer_params", &forwarded_params);
  } else {
    decode_body.Set("kv_transfer_params", &remote_prefill);
  }
  return decode_body;
}

bool WantsStream(const JsonValue& body) {
  const JsonValue* stream = body.Find("stream");
  return stream != nullptr && stream->is_bool() && stream->bool_value();
}
}  // namespace

// One generation request being proxied: the client side, the sim's record
// of the request, and P's reservation, which is released once (at D's first
// chunk or when the request ends, whichever comes first).
class Router::Call {
 public:
  Call(Router& router, ClientConn& conn, InstanceModel& instance, const IncomingRequest& request,
       const JsonValue& body, RequestState& r)
      : router_(router),
        conn_(conn),
        instance_(instance),
        request_(request),
        body_(body),
        r_(r),
        compat_(router.compat_),
        vllm_family_(IsVllmFamily(router.compat_)),
        stream_(WantsStream(body)),
        // vllm-ascend's calculate_prefill_score / calculate_decode_score, from
        // the body length; harmless weights for the round-robin profiles.
        prefill_score_(static_cast<double>(request.body.size()) / 4.0 * 0.0345 + 120.0745),
        decode_score_(static_cast<double>(request.body.size())) {}

  asio::awaitable<bool> Run();

 private:
  RequestHeaders LegHeaders();
  void ReleasePrefill();
  std::string ClientContentType(const std::string& upstream) const;
  asio::awaitable<bool> Fail(int status, absl::string_view message);
  asio::awaitable<bool> AnswerPrefillError(const FetchResult& prefill);
  asio::awaitable<bool> DecodeLeg(const JsonValue& decode_body, const RequestHeaders& headers);
  asio::awaitable<bool> DecodeFailed(int status, absl::string_view message);
  asio::awaitable<bool> RelayDecodeBody(tcp::socket& upstream, beast::flat_buffer& buffer,
                                        http::response_parser<http::buffer_body>& parser,
                                        int status);

  Router& router_;
  ClientConn& conn_;
  InstanceModel& instance_;
  const IncomingRequest& request_;
  const JsonValue& body_;
  RequestState& r_;
  const Compat compat_;
  const bool vllm_family_;
  const bool stream_;
  const double prefill_score_;
  const double decode_score_;
  size_t prefill_index_ = 0;
  bool prefill_released_ = false;
};

asio::awaitable<bool> Router::ServeGeneration(ClientConn& conn, InstanceModel& instance,
                                              const IncomingRequest& request, const JsonValue& body,
                                              GenerationRequest& parsed) {
  RequestMeta meta{request.request_id, request.load_tag, request.received};
  std::unique_ptr<RequestState> r = instance.Arrive(std::move(parsed), std::move(meta));
  if (r->fault == FaultAction::kError) {
    co_return co_await AnswerInjectedError(conn, instance, *r, request.keep_alive);
  }
  if (r->fault == FaultAction::kHang) {
    co_await HangUntilClientLeaves(conn, instance, *r);
    co_return false;
  }
  struct InFlight {
    std::atomic<int64_t>& n;
    ~InFlight() { --n; }
  } in_flight{requests_in_flight_};
  ++requests_in_flight_;
  Call call(*this, conn, instance, request, body, *r);
  co_return co_await call.Run();
}

asio::awaitable<bool> Router::Call::Run() {
  const RequestHeaders headers = LegHeaders();
  prefill_index_ = router_.Pick(true, prefill_score_);
  JsonValue prefill_body =
      request_.path == "/generate" ? NativePrefillBody(body_) : PrefillBody(compat_, body_);
  SglangBootstrap bootstrap;
  if (compat_ == Compat::kSglang) {
    bootstrap.room = JsonValue::Number(static_cast<double>(router_.FreshBootstrapRoom()), true);
    AddBootstrap(bootstrap, prefill_body);
  }
  const std::string prefill_json = ToJson(prefill_body);
  FetchResult prefill = co_await Fetch(router_.prefill_[prefill_index_], http::verb::post,
                                       request_.path, prefill_json, headers);
  if (!prefill.connected) {
    ReleasePrefill();
    co_return co_await Fail(502, "prefill instance unreachable");
  }
  if (prefill.status != 200) co_return co_await AnswerPrefillError(prefill);
  JsonValue decode_body = DecodeBody(compat_, body_, prefill.body);
  if (compat_ == Compat::kSglang) AddBootstrap(bootstrap, decode_body);
  co_return co_await DecodeLeg(decode_body, headers);
}

RequestHeaders Router::Call::LegHeaders() {
  switch (compat_) {
    case Compat::kSim:
      return {{"x-request-id", request_.request_id}, {"x-servelab-load", request_.load_tag}};
    case Compat::kVllm:
    case Compat::kVllmAscend: {
      // Both proxies send only these two headers, with a fresh uuid4 as the
      // request id of both legs (so P's and D's ids match each other, not
      // the client's).
      const char* key = std::getenv("OPENAI_API_KEY");
      return {{"authorization", absl::StrCat("Bearer ", key != nullptr ? key : "None")},
              {"x-request-id", router_.FreshRequestId()}};
    }
    case Compat::kSglang:
      // sgl-router/src/routers/header_utils.rs should_forward_request_header:
      // authorization, x-request-id(-*), x-correlation-id, traceparent,
      // tracestate; the sim only sees x-request-id.
      return {{"x-request-id", request_.request_id}};
  }
  return {};
}

void Router::Call::ReleasePrefill() {
  if (!prefill_released_) router_.Release(true, prefill_index_, prefill_score_);
  prefill_released_ = true;
}

// What the client sees once D's answer starts: the toy proxy always says
// StreamingResponse(media_type="application/json"); vllm-ascend's says
// text/event-stream when streaming.
std::string Router::Call::ClientContentType(const std::string& upstream) const {
  if (compat_ == Compat::kVllm) return "application/json";
  if (compat_ == Compat::kVllmAscend) {
    return stream_ ? "text/event-stream; charset=utf-8" : "application/json";
  }
  return upstream.empty() ? "application/json" : upstream;
}

// Answers when the proxy fails before D's response started.
asio::awaitable<bool> Router::Call::Fail(int status, absl::string_view message) {
  bool ok;
  if (vllm_family_) {
    // An exception in the FastAPI handler: Starlette's plain 500.
    status = 500;
    ok = co_await conn_.WriteResponse(500, "text/plain; charset=utf-8", "Internal Server Error",
                                      request_.keep_alive);
  } else {
    ok = co_await conn_.WriteJson(status, ErrorBody(status, message), request_.keep_alive);
  }
  instance_.Finish(r_, Outcome::kError, status);
  co_return ok;
}

asio::awaitable<bool> Router::Call::AnswerPrefillError(const FetchResult& prefill) {
  ReleasePrefill();
  if (compat_ == Compat::kVllm) co_return co_await Fail(500, "");
  // vllm-ascend answers JSONResponse(err_body, status_code) from P's error.
  bool ok = co_await conn_.WriteJson(prefill.status, prefill.body, request_.keep_alive);
  instance_.Finish(r_, Outcome::kError, prefill.status);
  co_return ok;
}

// Sends the decode leg to a D and relays its answer piece by piece.
asio::awaitable<bool> Router::Call::DecodeLeg(const JsonValue& decode_body,
                                              const RequestHeaders& headers) {
  const size_t d = router_.Pick(false, decode_score_);
  struct DecodeLoad {
    Router& router;
    size_t index;
    double load;
    ~DecodeLoad() { router.Release(false, index, load); }
  } decode_load{router_, d, decode_score_};
  const Upstream& decode = router_.decode_[d];
  tcp::socket upstream(co_await asio::this_coro::executor);
  boost::system::error_code ec;
  co_await upstream.async_connect(decode.endpoint, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return co_await DecodeFailed(502, "decode instance unreachable");
  auto req = MakeRequest(decode, http::verb::post, request_.path, ToJson(decode_body), headers);
  co_await http::async_write(upstream, req, asio::redirect_error(asio::use_awaitable, ec));
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<uint64_t>::max());
  if (!ec) {
    co_await http::async_read_header(upstream, buffer, parser,
                                     asio::redirect_error(asio::use_awaitable, ec));
  }
  if (ec) co_return co_await DecodeFailed(502, "decode instance failed before answering");
  int status = static_cast<int>(parser.get().result_int());
  if (vllm_family_ && status != 200) co_return co_await DecodeFailed(status, "");
  std::string content_type =
      ClientContentType(std::string(parser.get()[http::field::content_type]));
  if (!co_await conn_.StartChunked(status, content_type, request_.keep_alive)) {
    ReleasePrefill();
    instance_.Finish(r_, Outcome::kAborted, status);
    co_return false;
  }
  co_return co_await RelayDecodeBody(upstream, buffer, parser, status);
}

// vLLM proxies stream from D inside the response body generator, so D's
// failure comes after a 200 was sent: the toy proxy's generator raises
// (the connection is cut), vllm-ascend's logs it and ends the body.
asio::awaitable<bool> Router::Call::DecodeFailed(int status, absl::string_view message) {
  ReleasePrefill();
  if (!vllm_family_) co_return co_await Fail(502, message);
  // Awaited into a variable, not inside the `if`: g++ 12 miscompiles a
  // co_await in a condition of a coroutine that has no local variable.
  const bool started = co_await conn_.StartChunked(200, ClientContentType(""), request_.keep_alive);
  if (!started) {
    instance_.Finish(r_, Outcome::kAborted, 200);
    co_return false;
  }
  if (compat_ == Compat::kVllm) {
    conn_.Abort();
    instance_.Finish(r_, Outcome::kDropped, status);
    co_return false;
  }
  bool ok = co_await conn_.EndChunked("");
  instance_.Finish(r_, Outcome::kError, status);
  co_return ok;
}

// D's body, after its headers, to the client as it arrives.
asio::awaitable<bool> Router::Call::RelayDecodeBody(
    tcp::socket& upstream, beast::flat_buffer& buffer,
    http::response_parser<http::buffer_body>& parser, int status) {
  char piece[16384];
  bool first = true;
  boost::system::error_code ec;
  while (!parser.is_done()) {
    parser.get().body().data = piece;
    parser.get().body().size = sizeof(piece);
    co_await http::async_read_some(upstream, buffer, parser,
                                   asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) {
      // D dropped the stream: pass the truncation on rather than ending cleanly.
      ReleasePrefill();
      conn_.Abort();
      instance_.Finish(r_, Outcome::kDropped, status);
      co_return false;
    }
    size_t n = sizeof(piece) - parser.get().body().size;
    if (n == 0) continue;
    // vllm-ascend releases P's KV score at D's first chunk.
    ReleasePrefill();
    if (!co_await conn_.WriteChunk(absl::string_view(piece, n))) {
      instance_.Finish(r_, Outcome::kAborted, status);
      co_return false;
    }
    if (first && status == 200) instance_.OnToken(r_);
    first = false;
  }
  ReleasePrefill();
  bool ok = co_await conn_.EndChunked("");
  instance_.Finish(r_,
                   !ok             ? Outcome::kAborted
                   : status == 200 ? Outcome::kSuccess
                                   : Outcome::kError,
                   status);
  co_return ok;
}

namespace {
const std::string kNoBody;
const RequestHeaders kNoHeaders;
const std::string kHealthPath = "/health";
const std::string kModelsPath = "/v1/models";
}  // namespace

asio::awaitable<bool> Router::UpstreamsHealthy() {
  for (const std::vector<Upstream>* side : {&prefill_, &decode_}) {
    for (const Upstream& up : *side) {
      FetchResult f = co_await Fetch(up, http::verb::get, kHealthPath, kNoBody, kNoHeaders);
      if (f.status != 200) co_return false;
    }
  }
  co_return true;
}

asio::awaitable<std::vector<std::string>> Router::FanOut(const std::string& path) {
  std::vector<std::string> failed;
  for (const std::vector<Upstream>* side : {&prefill_, &decode_}) {
    for (const Upstream& up : *side) {
      FetchResult f = co_await Fetch(up, http::verb::post, path, kNoBody, kNoHeaders);
      if (f.status != 200) failed.push_back(up.url);
    }
  }
  co_return failed;
}

asio::awaitable<std::pair<int, std::string>> Router::Models() {
  if (compat_ == Compat::kVllmAscend) {
    // handle_models_impl: the first backend, prefillers first, that answers.
    std::vector<std::string> failed;
    for (const std::vector<Upstream>* side : {&prefill_, &decode_}) {
      for (const Upstream& up : *side) {
        FetchResult f = co_await Fetch(up, http::verb::get, kModelsPath, kNoBody, kNoHeaders);
        if (f.status == 200) co_return std::make_pair(200, f.body);
        failed.push_back(up.url);
      }
    }
    std::string list;
    for (const std::string& u : failed)
      absl::StrAppend(&list, list.empty() ? "" : ",", JsonQuote(u));
    co_return std::make_pair(
        503, absl::StrCat("{\"error\":\"All backend instances failed to serve /v1/models\","
                          "\"failed\":[",
                          list, "]}"));
  }
  FetchResult d = co_await Fetch(decode_[0], http::verb::get, kModelsPath, kNoBody, kNoHeaders);
  if (!d.connected) co_return std::make_pair(502, ErrorBody(502, "decode instance unreachable"));
  co_return std::make_pair(d.status, d.body);
}

}  // namespace servelab::sim
