#include "daemon/service/https_metrics_endpoint.h"

// g++ 12 with Boost 1.74 needs <utility> before <boost/asio.hpp> (see
// loadgen/beast.h), so clang-format must not sort these.
// clang-format off
#include <utility>

#include <boost/asio.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
// clang-format on

#include <chrono>
#include <exception>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace servelab::service {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

// A scraper that stalls (or a client that never finishes its handshake)
// holds a connection for at most this long.
constexpr auto kRequestTimeout = std::chrono::seconds(10);
// Connections past this are closed at accept: a scrape needs one.
constexpr int kMaxConnections = 64;
constexpr uint32_t kMaxHeaderBytes = 8 * 1024;
constexpr uint64_t kMaxBodyBytes = 8 * 1024;

auto OrError(boost::system::error_code& ec) {
  return asio::redirect_error(asio::use_awaitable, ec);
}

http::response<http::string_body> Answer(const http::request<http::string_body>& request,
                                         const std::function<std::string()>& render) {
  http::response<http::string_body> response;
  response.version(request.version());
  response.keep_alive(request.keep_alive());
  response.set(http::field::server, "servelabd");
  const beast::string_view target = request.target();
  const absl::string_view path(target.data(), target.find('?') == beast::string_view::npos
                                                  ? target.size()
                                                  : target.find('?'));
  if (path != "/metrics") {
    response.result(http::status::not_found);
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.body() = "only /metrics is served here\n";
  } else if (request.method() != http::verb::get) {
    response.result(http::status::method_not_allowed);
    response.set(http::field::allow, "GET");
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.body() = "/metrics answers GET\n";
  } else {
    response.result(http::status::ok);
    // The Prometheus text exposition format, as prometheus-cpp serves it.
    response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    response.body() = render();
  }
  response.prepare_payload();
  return response;
}

}  // namespace

struct HttpsMetricsEndpoint::State {
  // Declared before io, so the sessions io destroys can still use them.
  ssl::context tls{ssl::context::tls_server};
  std::function<std::string()> render;
  int connections = 0;  // only touched on the endpoint's thread
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;

  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> Session(tcp::socket socket);
};

asio::awaitable<void> HttpsMetricsEndpoint::State::Session(tcp::socket socket) {
  beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), tls);
  boost::system::error_code ec;
  beast::get_lowest_layer(stream).expires_after(kRequestTimeout);
  co_await stream.async_handshake(ssl::stream_base::server, OrError(ec));
  beast::flat_buffer buffer;
  bool keep_alive = !ec;
  while (keep_alive) {
    beast::get_lowest_layer(stream).expires_after(kRequestTimeout);
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(kMaxBodyBytes);
    co_await http::async_read(stream, buffer, parser, OrError(ec));
    if (ec) break;
    http::response<http::string_body> response = Answer(parser.get(), render);
    keep_alive = response.keep_alive();
    co_await http::async_write(stream, response, OrError(ec));
    if (ec) break;
  }
  if (!ec) {
    beast::get_lowest_layer(stream).expires_after(kRequestTimeout);
    co_await stream.async_shutdown(OrError(ec));
  }
}

asio::awaitable<void> HttpsMetricsEndpoint::State::AcceptLoop() {
  asio::steady_timer backoff(io);
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor.async_accept(OrError(ec));
    if (ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // Out of descriptors or the like: wait instead of spinning on it.
      backoff.expires_after(std::chrono::milliseconds(100));
      co_await backoff.async_wait(OrError(ec));
      continue;
    }
    if (connections >= kMaxConnections) continue;  // `socket` closes here
    ++connections;
    asio::co_spawn(io, Session(std::move(socket)), [this](std::exception_ptr) { --connections; });
  }
}

absl::StatusOr<std::unique_ptr<HttpsMetricsEndpoint>> HttpsMetricsEndpoint::Start(
    const std::string& host, int port, const std::string& cert_pem, const std::string& key_pem,
    std::function<std::string()> render) {
  auto state = std::make_unique<State>();
  state->render = std::move(render);
  boost::system::error_code ec;
  state->tls.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                             ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                             ssl::context::no_tlsv1_1,
                         ec);
  state->tls.use_certificate_chain(asio::buffer(cert_pem), ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("--tls-cert: ", ec.message()));
  state->tls.use_private_key(asio::buffer(key_pem), ssl::context::pem, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("--tls-key: ", ec.message()));
  if (SSL_CTX_check_private_key(state->tls.native_handle()) != 1) {
    return absl::InvalidArgumentError("--tls-key is not the key of --tls-cert");
  }

  const std::string where = absl::StrCat(host, ":", port);
  tcp::resolver resolver(state->io);
  tcp::resolver::results_type endpoints =
      resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (!ec && endpoints.empty()) ec = asio::error::host_not_found;
  if (!ec) state->acceptor.open(endpoints.begin()->endpoint().protocol(), ec);
  if (!ec) state->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) state->acceptor.bind(endpoints.begin()->endpoint(), ec);
  if (!ec) state->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve /metrics on ", where, ": ", ec.message()));
  }
  State& s = *state;
  asio::co_spawn(s.io, s.AcceptLoop(), asio::detached);
  s.thread = std::thread([&s] { s.io.run(); });
  return std::unique_ptr<HttpsMetricsEndpoint>(new HttpsMetricsEndpoint(std::move(state)));
}

HttpsMetricsEndpoint::HttpsMetricsEndpoint(std::unique_ptr<State> state)
    : state_(std::move(state)) {}

HttpsMetricsEndpoint::~HttpsMetricsEndpoint() {
  state_->io.stop();
  if (state_->thread.joinable()) state_->thread.join();
}

int HttpsMetricsEndpoint::port() const {
  boost::system::error_code ec;
  tcp::endpoint local = state_->acceptor.local_endpoint(ec);
  return ec ? 0 : local.port();
}

}  // namespace servelab::service
