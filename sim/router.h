// The router role: a P/D proxy in front of prefill and decode sim (or real
// engine) instances, in the manner of the --compat profile's proxy.
//
// For each generation request: the prefill leg goes to a P with max_tokens 1,
// non-streaming, kv_transfer_params.do_remote_decode = true; then the decode
// leg goes to a D with the original parameters and kv_transfer_params (the
// sim's {do_remote_prefill: true, remote_cached_tokens: <P's hit>}, or, under
// vllm / vllm-ascend, whatever P returned, as the upstream proxies do), and
// D's response (SSE or JSON) is relayed to the client as it arrives. Both P
// and D therefore count the request in their metrics.
//
// Per profile (sim/README.md, "Compatibility profiles", has the details):
//   sim         x-request-id and x-servelab-load forwarded; round robin.
//   vllm        tests/v1/kv_connector/nixl_integration/toy_proxy_server.py:
//               a fresh X-Request-Id (the same to P and D), no other client
//               header; round robin over the upstreams.
//   vllm-ascend examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py:
//               as vllm, but the least-loaded P and D (its score heaps).
//   sglang      sgl-router PD mode: only whitelisted headers (x-request-id,
//               authorization, tracing) reach P and D; round robin.
//
// Upstreams must be loopback (127.0.0.0/8, ::1 or localhost): the sim never
// sends traffic off the machine. One fresh upstream connection per leg.
//
// Thread-safe: the upstream lists are immutable after Create; the picking
// state is guarded by mu_; each call runs on its caller's executor.
#ifndef SERVELAB_SIM_ROUTER_H_
#define SERVELAB_SIM_ROUTER_H_

#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "sim/asio.h"
#include "sim/compat.h"
#include "sim/http_conn.h"
#include "sim/instance_model.h"
#include "sim/json.h"

namespace servelab::sim {

struct Upstream {
  std::string host;  // as given, for the Host header
  tcp::endpoint endpoint;
  std::string url;  // as given, for messages
};

// Parses "http://127.0.0.1:PORT" (path ignored); rejects non-loopback hosts.
absl::StatusOr<Upstream> ParseUpstreamUrl(const std::string& url);

class Router {
 public:
  // At least one URL of each kind.
  static absl::StatusOr<std::unique_ptr<Router>> Create(
      const std::vector<std::string>& prefill_urls, const std::vector<std::string>& decode_urls,
      Compat compat);

  Compat compat() const { return compat_; }
  size_t prefill_count() const { return prefill_.size(); }
  size_t decode_count() const { return decode_.size(); }
  // Generation requests being proxied now (vllm-ascend's request_num).
  int64_t requests_in_flight() const { return requests_in_flight_.load(); }

  // Serves one /v1/completions or /v1/chat/completions request already
  // validated by the caller (`body` is its JSON; `parsed` is moved from).
  // False = close the connection.
  asio::awaitable<bool> ServeGeneration(ClientConn& conn, InstanceModel& instance,
                                        const IncomingRequest& request, const JsonValue& body,
                                        GenerationRequest& parsed);
  // True when every upstream answers GET /health with 200.
  asio::awaitable<bool> UpstreamsHealthy();
  // POSTs `path` (/reset_prefix_cache or /flush_cache) to every upstream;
  // returns the URLs that did not answer 200.
  asio::awaitable<std::vector<std::string>> FanOut(const std::string& path);
  // GET /v1/models: (status, body). From the first decode upstream, or under
  // vllm-ascend from the first upstream (P first) that answers 200.
  asio::awaitable<std::pair<int, std::string>> Models();

 private:
  Router(std::vector<Upstream> prefill, std::vector<Upstream> decode, Compat compat);

  // Picks an upstream and adds `load` to it (vllm-ascend's heaps); Release
  // takes it off again.
  size_t Pick(bool prefill, double load);
  void Release(bool prefill, size_t index, double load);
  std::string FreshRequestId();
  // sgl-router PD mode's random bootstrap_room.
  uint64_t FreshBootstrapRoom();

  // The steps of one ServeGeneration call (router.cc).
  class Call;

  // Constant after construction.
  const std::vector<Upstream> prefill_;
  const std::vector<Upstream> decode_;
  const Compat compat_;

  absl::Mutex mu_;
  std::vector<double> prefill_load_ ABSL_GUARDED_BY(mu_);
  std::vector<double> decode_load_ ABSL_GUARDED_BY(mu_);
  size_t next_prefill_ ABSL_GUARDED_BY(mu_) = 0;
  size_t next_decode_ ABSL_GUARDED_BY(mu_) = 0;
  std::mt19937_64 ids_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> requests_in_flight_{0};
};

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_ROUTER_H_
