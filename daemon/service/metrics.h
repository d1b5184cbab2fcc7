// Metrics: the daemon's Prometheus metrics and their /metrics endpoint.
//
//   servelab_rpcs_total{method,code}  counter, one per finished RPC
//   servelab_experiments{state}       gauge (state="queued", ...), asked of
//   ControlPlane::CountByState
//                                     at scrape time (never stale)
//   and, as the stage runner's core::RunnerMetrics:
//   servelab_stage_duration_seconds{stage,action}       histogram
//   servelab_time_to_first_formal_request_seconds       histogram (submit -> first formal send)
//   servelab_queue_wait_seconds                         histogram (preflight done -> lane)
//   servelab_lane_busy                                  gauge 0/1
//   servelab_formal_requests_total{outcome}             counter (sent, completed, failed)
//   servelab_instance_launches_total{side}              counter
//   servelab_stage_reuse_total{stage}                   counter
//
//   Metrics metrics(control_plane);
//   SERVELAB_RETURN_IF_ERROR(metrics.Listen("127.0.0.1:9464"));
//   metrics.RecordRpc("GetExperiment", absl::StatusCode::kNotFound);
//
// One shared Registry outlives the Exposer; families are built once in the
// constructor, with every label value known in advance (each stage's "run"
// duration and reuse count, the three outcomes, the three sides) at 0, so
// Prometheus's rate() and increase() see their first event. prometheus-cpp
// throws when it cannot bind: Listen() catches that and returns
// UNAVAILABLE. Thread-safe.
#ifndef SERVELAB_DAEMON_SERVICE_METRICS_H_
#define SERVELAB_DAEMON_SERVICE_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "daemon/core/control_plane.h"
#include "daemon/core/runner_metrics.h"
#include "daemon/service/https_metrics_endpoint.h"

namespace servelab::service {

class Metrics : public core::RunnerMetrics {
 public:
  // `control_plane` must outlive this object.
  explicit Metrics(core::ControlPlane& control_plane);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Serves /metrics on `bind_address` ("HOST:PORT"; port 0 picks a free one).
  // Call at most once. UNAVAILABLE when the address cannot be bound.
  absl::Status Listen(const std::string& bind_address);
  // As Listen, over TLS with the PEM certificate chain and key, for a host
  // that is not loopback (HttpsMetricsEndpoint). INVALID_ARGUMENT when the
  // certificate or key is unusable.
  absl::Status ListenTls(const std::string& host, int port, const std::string& cert_pem,
                         const std::string& key_pem);
  // The bound port; 0 when not listening.
  int port() const;

  void RecordRpc(std::string_view method, absl::StatusCode code);

  void ObserveStage(const std::string& stage, const std::string& action, double seconds) override;
  void ObserveTimeToFirstFormalRequest(double seconds) override;
  void ObserveQueueWait(double seconds) override;
  void SetLaneBusy(bool busy) override;
  void CountFormalRequests(const std::string& outcome, int64_t n) override;
  void CountInstanceLaunch(const std::string& side) override;
  void CountStageReuse(const std::string& stage) override;

  // Every family as a scrape would see it.
  std::vector<prometheus::MetricFamily> Collect() const;

 private:
  class ExperimentsCollector;
  static prometheus::Histogram::BucketBoundaries LatencyBuckets();

  // Constant after construction.
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& rpcs_total_;
  prometheus::Family<prometheus::Histogram>& stage_duration_;
  prometheus::Histogram& first_formal_request_;
  prometheus::Histogram& queue_wait_;
  prometheus::Gauge& lane_busy_;
  prometheus::Family<prometheus::Counter>& formal_requests_;
  prometheus::Family<prometheus::Counter>& instance_launches_;
  prometheus::Family<prometheus::Counter>& stage_reuse_;
  std::shared_ptr<ExperimentsCollector> experiments_;
  // Declared last so they stop serving before the collectables go away.
  // At most one of them serves.
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::unique_ptr<HttpsMetricsEndpoint> https_;
};

}  // namespace servelab::service

#endif  // SERVELAB_DAEMON_SERVICE_METRICS_H_
