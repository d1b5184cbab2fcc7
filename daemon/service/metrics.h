// Metrics: the daemon's Prometheus metrics and their /metrics endpoint.
//
//   servelab_rpcs_total{method,code}  counter, one per finished RPC
//   servelab_experiments{state}       gauge (state="queued", ...), asked of ControlPlane::CountByState
//                                     at scrape time (never stale)
//
//   Metrics metrics(control_plane);
//   SERVELAB_RETURN_IF_ERROR(metrics.Listen("127.0.0.1:9464"));
//   metrics.RecordRpc("GetExperiment", absl::StatusCode::kNotFound);
//
// One shared Registry outlives the Exposer; families are built once in the
// constructor. prometheus-cpp throws when it cannot bind: Listen() catches
// that and returns UNAVAILABLE. Thread-safe.
#ifndef SERVELAB_DAEMON_SERVICE_METRICS_H_
#define SERVELAB_DAEMON_SERVICE_METRICS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include "absl/status/status.h"
#include "daemon/core/control_plane.h"

namespace servelab::service {

class Metrics {
 public:
  // `control_plane` must outlive this object.
  explicit Metrics(core::ControlPlane& control_plane);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Serves /metrics on `bind_address` ("HOST:PORT"; port 0 picks a free one).
  // Call at most once. UNAVAILABLE when the address cannot be bound.
  absl::Status Listen(const std::string& bind_address);
  // The bound port; 0 when not listening.
  int port() const;

  void RecordRpc(std::string_view method, absl::StatusCode code);

  // Every family as a scrape would see it.
  std::vector<prometheus::MetricFamily> Collect() const;

 private:
  class ExperimentsCollector;

  // Constant after construction.
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& rpcs_total_;
  std::shared_ptr<ExperimentsCollector> experiments_;
  // Declared last so it stops serving before the collectables go away.
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace servelab::service

#endif  // SERVELAB_DAEMON_SERVICE_METRICS_H_
