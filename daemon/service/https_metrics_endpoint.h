// HttpsMetricsEndpoint: GET /metrics over TLS, for a --metrics-listen host
// that is not loopback (docs/design.md §13). prometheus-cpp's own server
// (civetweb 1.15 in Debian 12) loads OpenSSL 1.1's symbols at run time and
// crashes on the first TLS connection under OpenSSL 3, so TLS is served here
// with Boost.Asio's SSL stream and Beast, the only translation unit of the
// daemon that includes them.
//
//   auto endpoint = HttpsMetricsEndpoint::Start("0.0.0.0", 0, cert_pem, key_pem,
//                                               [&] { return RenderText(); });
//   int port = (*endpoint)->port();
//
// One thread; TLS 1.2 or later; each connection must finish its handshake
// and each request within kRequestTimeout, at most kMaxConnections at once
// (more are closed at accept). GET (and HEAD) /metrics answers 200 with the
// text exposition format; another path 404, another method 405.
#ifndef SERVELAB_DAEMON_SERVICE_HTTPS_METRICS_ENDPOINT_H_
#define SERVELAB_DAEMON_SERVICE_HTTPS_METRICS_ENDPOINT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace servelab::service {

class HttpsMetricsEndpoint {
 public:
  // Binds HOST:PORT (port 0 picks a free one) and serves until destroyed.
  // INVALID_ARGUMENT when the certificate or key is unusable, UNAVAILABLE
  // when the address cannot be bound. `render` runs on the endpoint's
  // thread, once per scrape.
  static absl::StatusOr<std::unique_ptr<HttpsMetricsEndpoint>> Start(
      const std::string& host, int port, const std::string& cert_pem, const std::string& key_pem,
      std::function<std::string()> render);
  ~HttpsMetricsEndpoint();
  HttpsMetricsEndpoint(const HttpsMetricsEndpoint&) = delete;
  HttpsMetricsEndpoint& operator=(const HttpsMetricsEndpoint&) = delete;

  int port() const;

 private:
  struct State;
  explicit HttpsMetricsEndpoint(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace servelab::service

#endif  // SERVELAB_DAEMON_SERVICE_HTTPS_METRICS_ENDPOINT_H_
