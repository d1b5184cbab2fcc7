// The router role: a P/D proxy in front of one prefill and one decode sim
// (or vLLM) instance, as vLLM's disaggregated-prefill proxy does it.
//
// For each generation request: the prefill leg goes to P with max_tokens 1,
// non-streaming, kv_transfer_params.do_remote_decode = true; then the decode
// leg goes to D with the original parameters and kv_transfer_params
// {do_remote_prefill: true, remote_cached_tokens: <P's cache hit>}, and D's
// response (SSE or JSON) is relayed to the client as it arrives. Both P and D
// therefore count the request in their metrics, which is what route
// verification checks. x-request-id and x-servelab-load are forwarded.
//
// Upstreams must be loopback (127.0.0.0/8, ::1 or localhost): the sim never
// sends traffic off the machine. One fresh upstream connection per leg.
//
// Thread-safe: immutable after Create; each call runs on its caller's executor.
#ifndef SERVELAB_SIM_ROUTER_H_
#define SERVELAB_SIM_ROUTER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sim/asio.h"
#include "sim/engine.h"
#include "sim/http_conn.h"
#include "sim/json.h"

namespace servelab::sim {

struct Upstream {
  std::string host;  // as given, for the Host header
  tcp::endpoint endpoint;
};

// Parses "http://127.0.0.1:PORT" (path ignored); rejects non-loopback hosts.
absl::StatusOr<Upstream> ParseUpstreamUrl(const std::string& url);

class Router {
 public:
  static absl::StatusOr<std::unique_ptr<Router>> Create(const std::string& prefill_url,
                                                        const std::string& decode_url);

  // Serves one /v1/completions or /v1/chat/completions request already
  // validated by the caller (`body` is its JSON; `parsed` is moved from).
  // False = close the connection.
  asio::awaitable<bool> ServeGeneration(ClientConn& conn, Engine& engine,
                                        const IncomingRequest& request, const JsonValue& body,
                                        GenerationRequest& parsed);
  // True when both upstreams answer GET /health with 200.
  asio::awaitable<bool> UpstreamsHealthy();
  // POST /reset_prefix_cache on both; true when both answered 200.
  asio::awaitable<bool> ResetPrefixCaches();
  // GET /v1/models from the decode side: (status, body).
  asio::awaitable<std::pair<int, std::string>> Models();

 private:
  Router(Upstream prefill, Upstream decode)
      : prefill_(std::move(prefill)), decode_(std::move(decode)) {}

  const Upstream prefill_;
  const Upstream decode_;
};

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_ROUTER_H_
