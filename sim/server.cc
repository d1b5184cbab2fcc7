#include "sim/server.h"

#include <sys/socket.h>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "common/receive_stamp.h"
#include "sim/generation.h"
#include "sim/json.h"
#include "sim/log.h"
#include "sim/request.h"

namespace servelab::sim {
namespace http = boost::beast::http;
namespace beast = boost::beast;

namespace {

// A /v1/completions prompt that is a string or a list of strings.
bool PromptIsText(const JsonValue& body) {
  const JsonValue* prompt = body.Find("prompt");
  if (prompt == nullptr || prompt->is_string()) return true;
  if (!prompt->is_array()) return false;
  for (const JsonValue& item : prompt->items()) {
    if (!item.is_string()) return false;
  }
  return true;
}

}  // namespace

Server::Server(const ServerOptions& options, InstanceModel& instance, Router* router)
    : options_(options),
      instance_(instance),
      router_(router),
      contexts_([&] {
        std::vector<std::unique_ptr<asio::io_context>> c;
        for (int i = 0; i < std::max(options.threads, 1); ++i) {
          // Concurrency hint 1: each context is run by exactly one thread.
          c.push_back(std::make_unique<asio::io_context>(1));
        }
        return c;
      }()),
      acceptor_(*contexts_[0]),
      reopen_timer_(*contexts_[0]) {}

Server::~Server() { Shutdown(); }

absl::StatusOr<std::unique_ptr<Server>> Server::Create(const ServerOptions& options,
                                                       InstanceModel& instance, Router* router) {
  std::unique_ptr<Server> server(new Server(options, instance, router));
  absl::Status s = server->Listen();
  if (!s.ok()) return s;
  return server;
}

absl::Status Server::Listen() {
  boost::system::error_code ec;
  asio::ip::address address = asio::ip::make_address(options_.host, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("bad --host '", options_.host, "'"));
  tcp::endpoint endpoint(address, static_cast<unsigned short>(port_ != 0 ? port_ : options_.port));
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  // The kernel stamps every segment that arrives (SO_TIMESTAMPNS), and each
  // accepted connection inherits the flag: a request's bytes are stamped even
  // when they come before the sim accepts (ClientConn::NextByteArrival).
  // Without it a request arrives when the sim reads it, as before.
  if (!ec) EnableReceiveStamps(acceptor_.native_handle());
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    acceptor_.close();
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options_.host, ":", endpoint.port(), ": ", ec.message()));
  }
  port_ = acceptor_.local_endpoint().port();
  return absl::OkStatus();
}

void Server::Start() {
  asio::co_spawn(*contexts_[0], AcceptLoop(), asio::detached);
  for (auto& context : contexts_) {
    work_.push_back(asio::make_work_guard(*context));
    threads_.emplace_back([ctx = context.get()] { ctx->run(); });
  }
}

void Server::Shutdown() {
  for (auto& context : contexts_) context->stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  work_.clear();
}

asio::awaitable<void> Server::AcceptLoop() {
  while (acceptor_.is_open()) {
    asio::io_context& target = *contexts_[next_context_++ % contexts_.size()];
    boost::system::error_code ec;
    tcp::socket socket =
        co_await acceptor_.async_accept(target, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (!acceptor_.is_open() || ec == asio::error::operation_aborted) break;
      SimLog().warn("accept failed: {}", ec.message());
      continue;
    }
    asio::co_spawn(target, Session(std::move(socket)), asio::detached);
  }
}

void Server::RefuseConnections(std::chrono::nanoseconds duration) {
  asio::post(*contexts_[0], [this, duration] {
    if (!acceptor_.is_open()) return;  // already refusing
    SimLog().warn("fault: refusing connections for {} ms", duration.count() / 1000000);
    boost::system::error_code ec;
    acceptor_.close(ec);
    reopen_timer_.expires_after(duration);
    reopen_timer_.async_wait([this](boost::system::error_code ec) {
      if (ec) return;
      absl::Status s = Listen();
      if (!s.ok()) {
        SimLog().error("fault: could not listen again: {}", std::string(s.message()));
        return;
      }
      asio::co_spawn(*contexts_[0], AcceptLoop(), asio::detached);
    });
  });
}

asio::awaitable<void> Server::Session(tcp::socket socket) {
  boost::system::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  ClientConn conn(std::move(socket));
  beast::flat_buffer buffer;
  while (true) {
    HttpRequestParser parser;
    parser.body_limit(static_cast<uint64_t>(instance_.config().max_body_bytes));
    // The request arrives with its first byte, not once it is whole and
    // parsed: a large prompt's reading is the server's time, as the
    // client's TTFT counts it. Pipelined bytes are already here.
    auto received = std::chrono::steady_clock::now();
    if (buffer.size() == 0) {
      co_await conn.socket().async_wait(tcp::socket::wait_read,
                                        asio::redirect_error(asio::use_awaitable, ec));
      received = conn.NextByteArrival();
    }
    co_await http::async_read(conn.socket(), buffer, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::body_limit) {
      co_await conn.WriteJson(413, ErrorBody(413, "request body too large"), false);
      break;
    }
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      break;
    }
    if (ec) {
      co_await conn.WriteJson(400, ErrorBody(400, absl::StrCat("bad HTTP request: ", ec.message())),
                              false);
      break;
    }
    IncomingRequest request = ToIncomingRequest(parser.get());
    request.received = received;
    bool keep = co_await Dispatch(conn, request);
    if (!keep || !request.keep_alive) break;
  }
  conn.socket().shutdown(tcp::socket::shutdown_send, ec);
  conn.socket().close(ec);
}

asio::awaitable<bool> Server::HandleGeneration(ClientConn& conn, IncomingRequest& request,
                                               ApiKind kind) {
  const Compat compat = instance_.compat().compat;
  // The toy proxy forwards whatever arrives and turns P's 4xx (or a body
  // that is not JSON) into an exception: Starlette's plain 500.
  const bool toy_proxy = router_ != nullptr && compat == Compat::kVllm;
  absl::StatusOr<JsonValue> body = ParseJson(request.body);
  if (!body.ok()) {
    if (toy_proxy || (router_ != nullptr && compat == Compat::kVllmAscend)) {
      co_return co_await conn.WriteResponse(500, "text/plain; charset=utf-8",
                                            "Internal Server Error", request.keep_alive);
    }
    co_return co_await conn.WriteJson(400, ErrorBody(400, body.status().message()),
                                      request.keep_alive);
  }
  // A real P/D proxy has no model of its own and never checks the name: it
  // forwards the request and lets the upstream answer (toy_proxy_server.py,
  // load_balance_proxy_server_example.py, sglang_router). Only the sim's own
  // router (compat sim) keeps today's check.
  SimConfig config = instance_.config();
  if (router_ != nullptr && compat != Compat::kSim) {
    if (const JsonValue* model = body->Find("model"); model != nullptr && model->is_string()) {
      config.model = model->string_value();
    }
  }
  if (router_ != nullptr && compat == Compat::kSglang && kind == ApiKind::kCompletion &&
      !PromptIsText(*body)) {
    // sgl-router's CompletionRequest.prompt is StringOrArray of strings
    // (src/protocols/common.rs): axum refuses token ids before routing.
    co_return co_await conn.WriteResponse(
        422, "text/plain; charset=utf-8",
        "Failed to deserialize the JSON body into the target type: prompt: data did not match "
        "any variant of untagged enum StringOrArray",
        request.keep_alive);
  }
  absl::StatusOr<GenerationRequest> parsed = kind == ApiKind::kGenerate
                                                 ? ParseGenerateRequest(*body, config)
                                                 : ParseGenerationRequest(*body, kind, config);
  if (!parsed.ok()) {
    if (toy_proxy) {
      co_return co_await conn.WriteResponse(500, "text/plain; charset=utf-8",
                                            "Internal Server Error", request.keep_alive);
    }
    int status = HttpStatusFor(parsed.status());
    co_return co_await conn.WriteJson(status, ErrorBody(status, parsed.status().message()),
                                      request.keep_alive);
  }
  // Proxies in front of real engines drop client headers, so the load tag
  // may only survive in the body.
  if (request.load_tag.empty()) request.load_tag = parsed->user;
  if (!instance_.Ready()) {
    co_return co_await conn.WriteJson(503, ErrorBody(503, "the model is still loading"),
                                      request.keep_alive);
  }
  GenerationRequest generation = *std::move(parsed);
  if (router_ != nullptr) {
    co_return co_await router_->ServeGeneration(conn, instance_, request, *body, generation);
  }
  RequestMeta meta{request.request_id, request.load_tag, request.received};
  co_return co_await ServeGeneration(conn, instance_, generation, meta, request.keep_alive);
}

asio::awaitable<bool> Server::NotFound(ClientConn& conn, const IncomingRequest& request) {
  const Compat compat = instance_.compat().compat;
  if (router_ != nullptr && compat == Compat::kSglang) {
    // sgl-router is axum: an unknown route is an empty 404.
    co_return co_await conn.WriteResponse(404, "text/plain", "", request.keep_alive);
  }
  co_return co_await conn.WriteJson(404, NotFoundBody(compat, request.path), request.keep_alive);
}

asio::awaitable<bool> Server::DispatchVllmProxy(ClientConn& conn, IncomingRequest& request) {
  // toy_proxy_server.py serves /v1/completions, /v1/chat/completions and
  // /healthcheck only; load_balance_proxy_server_example.py adds /v1/models
  // and /reset_prefix_cache (and /instances/add|remove, not modelled).
  const std::string& path = request.path;
  const bool keep = request.keep_alive;
  const bool ascend = router_->compat() == Compat::kVllmAscend;
  auto allow = [&](const char* method) { return request.method == method; };
  auto method_not_allowed = [&]() -> asio::awaitable<bool> {
    co_return co_await conn.WriteJson(405, "{\"detail\":\"Method Not Allowed\"}", keep);
  };
  if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!allow("POST")) co_return co_await method_not_allowed();
    co_return co_await HandleGeneration(
        conn, request, path == "/v1/completions" ? ApiKind::kCompletion : ApiKind::kChat);
  }
  if (path == "/healthcheck") {
    if (!allow("GET")) co_return co_await method_not_allowed();
    std::string body =
        absl::StrCat("{\"status\":\"ok\",\"prefill_instances\":", router_->prefill_count(),
                     ",\"decode_instances\":", router_->decode_count());
    if (ascend) absl::StrAppend(&body, ",\"request_num\":", router_->requests_in_flight());
    body += "}";
    co_return co_await conn.WriteJson(200, body, keep);
  }
  if (ascend && path == "/v1/models") {
    if (!allow("GET")) co_return co_await method_not_allowed();
    auto [status, body] = co_await router_->Models();
    co_return co_await conn.WriteJson(status, body, keep);
  }
  if (ascend && path == "/reset_prefix_cache") {
    if (!allow("POST")) co_return co_await method_not_allowed();
    const std::string reset_path = "/reset_prefix_cache";
    std::vector<std::string> failed = co_await router_->FanOut(reset_path);
    if (failed.empty()) co_return co_await conn.WriteResponse(200, "text/plain", "", keep);
    std::string list;
    for (const std::string& u : failed)
      absl::StrAppend(&list, list.empty() ? "" : ",", JsonQuote(u));
    co_return co_await conn.WriteJson(500, absl::StrCat("{\"failed\":[", list, "]}"), keep);
  }
  co_return co_await NotFound(conn, request);
}

asio::awaitable<bool> Server::Dispatch(ClientConn& conn, IncomingRequest& request) {
  const std::string& path = request.path;
  const bool get = request.method == "GET", post = request.method == "POST";
  const bool keep = request.keep_alive;
  const CompatOptions& compat = instance_.compat();
  if (router_ != nullptr && IsVllmFamily(compat.compat)) {
    co_return co_await DispatchVllmProxy(conn, request);
  }
  if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!post) co_return co_await MethodNotAllowed(conn, keep);
    co_return co_await HandleGeneration(
        conn, request, path == "/v1/completions" ? ApiKind::kCompletion : ApiKind::kChat);
  }
  // SGLang's native generation route, on the servers and on sgl-router
  // (python/sglang/srt/entrypoints/http_server.py, sgl-router src/server.rs).
  if (path == "/generate" && compat.compat == Compat::kSglang) {
    if (!post) co_return co_await MethodNotAllowed(conn, keep);
    co_return co_await HandleGeneration(conn, request, ApiKind::kGenerate);
  }
  // python/sglang/srt/entrypoints/http_server.py also has /health_generate
  // (health through a one-token generation); the sim answers it like /health.
  if (path == "/health" ||
      (path == "/health_generate" && compat.compat == Compat::kSglang && router_ == nullptr)) {
    if (!get) co_return co_await MethodNotAllowed(conn, keep);
    co_return co_await ServeHealth(conn, keep);
  }
  if (path == "/metrics") {
    if (router_ == nullptr && !ServesMetrics(compat)) co_return co_await NotFound(conn, request);
    if (!get) co_return co_await MethodNotAllowed(conn, keep);
    co_return co_await conn.WriteResponse(200, "text/plain; version=0.0.4; charset=utf-8",
                                          instance_.RenderMetrics(), keep);
  }
  if (path == "/v1/models") {
    if (!get) co_return co_await MethodNotAllowed(conn, keep);
    co_return co_await ServeModels(conn, keep);
  }
  if (path == "/reset_prefix_cache" &&
      (router_ != nullptr ? compat.compat == Compat::kSim : ServesResetPrefixCache(compat))) {
    if (!post) co_return co_await MethodNotAllowed(conn, keep);
    co_return co_await ServeResetPrefixCache(conn, keep);
  }
  if (path == "/flush_cache" && compat.compat == Compat::kSglang) {
    // python/sglang/srt/entrypoints/http_server.py: GET or POST.
    if (!get && !post) co_return co_await MethodNotAllowed(conn, keep);
    co_return co_await ServeFlushCache(conn, keep);
  }
  if (path == "/admin/faults") co_return co_await ServeFaults(conn, request);
  if (path == "/debug/requests") {
    if (!get) co_return co_await MethodNotAllowed(conn, keep);
    co_return co_await conn.WriteJson(200, instance_.DebugRequestsJson(), keep);
  }
  if (path == "/debug/loads") {
    if (!get) co_return co_await MethodNotAllowed(conn, keep);
    co_return co_await conn.WriteJson(200, instance_.LoadsJson(), keep);
  }
  co_return co_await NotFound(conn, request);
}

asio::awaitable<bool> Server::MethodNotAllowed(ClientConn& conn, bool keep_alive) {
  if (instance_.compat().compat != Compat::kSim) {
    co_return co_await conn.WriteJson(405, "{\"detail\":\"Method Not Allowed\"}", keep_alive);
  }
  co_return co_await conn.WriteJson(405, ErrorBody(405, "method not allowed"), keep_alive);
}

asio::awaitable<bool> Server::ServeHealth(ClientConn& conn, bool keep_alive) {
  bool healthy = instance_.Ready();
  if (healthy && router_ != nullptr) healthy = co_await router_->UpstreamsHealthy();
  if (healthy) co_return co_await conn.WriteResponse(200, "text/plain", "", keep_alive);
  co_return co_await conn.WriteJson(
      503, ErrorBody(503, router_ ? "an upstream is not healthy" : "the model is still loading"),
      keep_alive);
}

asio::awaitable<bool> Server::ServeModels(ClientConn& conn, bool keep_alive) {
  if (router_ != nullptr) {
    auto [status, body] = co_await router_->Models();
    co_return co_await conn.WriteJson(status, body, keep_alive);
  }
  const Compat compat = instance_.compat().compat;
  const SimConfig& c = instance_.config();
  co_return co_await conn.WriteJson(
      200,
      absl::StrCat("{\"object\":\"list\",\"data\":[{\"id\":", JsonQuote(c.model),
                   ",\"object\":\"model\",\"created\":", static_cast<int64_t>(std::time(nullptr)),
                   ",\"owned_by\":\"", ModelOwner(compat), "\",\"root\":", JsonQuote(c.model),
                   // vLLM's ModelCard also says parent (null for a base model).
                   IsVllmFamily(compat) ? ",\"parent\":null" : "",
                   ",\"max_model_len\":", c.max_model_len, "}]}"),
      keep_alive);
}

asio::awaitable<bool> Server::ServeResetPrefixCache(ClientConn& conn, bool keep_alive) {
  if (router_ != nullptr) {
    const std::string reset_path = "/reset_prefix_cache";
    std::vector<std::string> failed = co_await router_->FanOut(reset_path);
    if (!failed.empty()) {
      co_return co_await conn.WriteJson(502, ErrorBody(502, "an upstream did not reset"),
                                        keep_alive);
    }
  }
  // vllm/entrypoints/serve/dev/cache/api_router.py: "we currently do not
  // check if the prefix cache is successfully reset" -- 200 either way.
  instance_.ResetPrefixCache();
  co_return co_await conn.WriteResponse(200, "text/plain", "", keep_alive);
}

// python/sglang/srt/entrypoints/http_server.py: 200 when the scheduler
// flushed, 400 when it refused (not idle), same text.
asio::awaitable<bool> Server::ServeFlushCache(ClientConn& conn, bool keep_alive) {
  if (router_ != nullptr) {
    // sgl-router's /flush_cache posts to every worker.
    const std::string flush_path = "/flush_cache";
    std::vector<std::string> failed = co_await router_->FanOut(flush_path);
    if (failed.empty()) {
      co_return co_await conn.WriteResponse(200, "text/plain", "Cache flushed on all servers",
                                            keep_alive);
    }
    co_return co_await conn.WriteResponse(
        500, "text/plain", absl::StrCat("Failed to flush cache on ", failed.size(), " server(s)"),
        keep_alive);
  }
  const bool flushed = instance_.ResetPrefixCache();
  co_return co_await conn.WriteResponse(
      flushed ? 200 : 400, "text/plain; charset=utf-8",
      "Cache flushed.\nPlease check backend logs for more details. (When there are running or "
      "waiting requests, the operation will not be performed.)\n",
      keep_alive);
}

// GET shows the faults; POST sets them.
asio::awaitable<bool> Server::ServeFaults(ClientConn& conn, const IncomingRequest& request) {
  const bool keep = request.keep_alive;
  if (request.method == "GET") co_return co_await conn.WriteJson(200, instance_.FaultsJson(), keep);
  if (request.method != "POST") co_return co_await MethodNotAllowed(conn, keep);
  absl::StatusOr<JsonValue> body = ParseJson(request.body);
  absl::StatusOr<FaultEffects> effects =
      body.ok() ? instance_.ApplyFaults(*body) : absl::StatusOr<FaultEffects>(body.status());
  if (!effects.ok()) {
    co_return co_await conn.WriteJson(400, ErrorBody(400, effects.status().message()), keep);
  }
  SimLog().info("faults set: {}", instance_.FaultsJson());
  bool ok = co_await conn.WriteJson(200, instance_.FaultsJson(), keep);
  if (effects->refuse_connections.count() > 0) RefuseConnections(effects->refuse_connections);
  co_return ok;
}

}  // namespace servelab::sim
