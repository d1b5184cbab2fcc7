#include "daemon/service/metrics.h"

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_type.h>
#include <prometheus/text_serializer.h>

#include <exception>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/labels.h"
#include "daemon/service/logging.h"

namespace servelab::service {

// Asks the control plane at scrape time, so the gauge cannot drift from the
// store (a counter kept beside the writes would, after a restart).
class Metrics::ExperimentsCollector : public prometheus::Collectable {
 public:
  explicit ExperimentsCollector(core::ControlPlane& control_plane)
      : control_plane_(control_plane) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    auto counts = control_plane_.CountByState();
    if (!counts.ok()) {
      Logger("metrics")->warn("servelab_experiments not collected: {}", counts.status().ToString());
      return {};
    }
    prometheus::MetricFamily family;
    family.name = "servelab_experiments";
    family.help = "Experiments by state.";
    family.type = prometheus::MetricType::Gauge;
    for (const auto& [state, count] : *counts) {
      prometheus::ClientMetric metric;
      // Whatever form the control plane uses, the label is "queued", "failed"...
      absl::string_view label = state;
      absl::ConsumePrefix(&label, "EXPERIMENT_STATE_");
      metric.label.push_back({"state", absl::AsciiStrToLower(label)});
      metric.gauge.value = static_cast<double>(count);
      family.metric.push_back(std::move(metric));
    }
    return {std::move(family)};
  }

 private:
  core::ControlPlane& control_plane_;
};

Metrics::Metrics(core::ControlPlane& control_plane)
    : registry_(std::make_shared<prometheus::Registry>()),
      rpcs_total_(prometheus::BuildCounter()
                      .Name("servelab_rpcs_total")
                      .Help("Finished RPCs by method and gRPC status code.")
                      .Register(*registry_)),
      stage_duration_(prometheus::BuildHistogram()
                          .Name("servelab_stage_duration_seconds")
                          .Help("Stage durations by stage and planned action (run, reuse, skip).")
                          .Register(*registry_)),
      first_formal_request_(prometheus::BuildHistogram()
                                .Name("servelab_time_to_first_formal_request_seconds")
                                .Help("From SubmitExperiment to the first formal request sent.")
                                .Register(*registry_)
                                .Add({}, LatencyBuckets())),
      queue_wait_(prometheus::BuildHistogram()
                      .Name("servelab_queue_wait_seconds")
                      .Help("From preflight done to the accelerator lane.")
                      .Register(*registry_)
                      .Add({}, LatencyBuckets())),
      lane_busy_(prometheus::BuildGauge()
                     .Name("servelab_lane_busy")
                     .Help("1 while an experiment holds the accelerator lane.")
                     .Register(*registry_)
                     .Add({})),
      formal_requests_(prometheus::BuildCounter()
                           .Name("servelab_formal_requests_total")
                           .Help("Formal requests by outcome (sent, completed, failed).")
                           .Register(*registry_)),
      instance_launches_(prometheus::BuildCounter()
                             .Name("servelab_instance_launches_total")
                             .Help("Serving instances launched, by side.")
                             .Register(*registry_)),
      stage_reuse_(prometheus::BuildCounter()
                       .Name("servelab_stage_reuse_total")
                       .Help("Stages reused from the hot deployment, by stage.")
                       .Register(*registry_)),
      experiments_(std::make_shared<ExperimentsCollector>(control_plane)) {
  // Every label value known in advance starts at 0. A series that first
  // appears at 1 has no earlier sample, so rate() and increase() in
  // Prometheus (and the dashboard's panels) would never count that first
  // event: the first reuse, launch or run of a stage after a daemon start.
  for (int i = v1::StageName_MIN; i <= v1::StageName_MAX; ++i) {
    if (!v1::StageName_IsValid(i) || i == v1::STAGE_UNSPECIFIED) continue;
    const std::string stage = StageLabel(static_cast<v1::StageName>(i));
    stage_duration_.Add({{"stage", stage}, {"action", ActionLabel(v1::STAGE_ACTION_RUN)}},
                        LatencyBuckets());
    stage_reuse_.Add({{"stage", stage}});
  }
  for (const char* outcome : {"sent", "completed", "failed"}) {
    formal_requests_.Add({{"outcome", outcome}});
  }
  for (v1::Side side : {v1::SIDE_PREFILL, v1::SIDE_DECODE, v1::SIDE_ROUTER}) {
    instance_launches_.Add({{"side", SideLabel(side)}});
  }
}

// From 1 ms (a reused hot deployment) to an hour (a cold launch).
prometheus::Histogram::BucketBoundaries Metrics::LatencyBuckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5,  1,   2.5,
          5,     10,    30,   60,   120,  300, 600,  1800, 3600};
}

void Metrics::ObserveStage(const std::string& stage, const std::string& action, double seconds) {
  stage_duration_.Add({{"stage", stage}, {"action", action}}, LatencyBuckets()).Observe(seconds);
}

void Metrics::ObserveTimeToFirstFormalRequest(double seconds) {
  first_formal_request_.Observe(seconds);
}

void Metrics::ObserveQueueWait(double seconds) { queue_wait_.Observe(seconds); }

void Metrics::SetLaneBusy(bool busy) { lane_busy_.Set(busy ? 1 : 0); }

void Metrics::CountFormalRequests(const std::string& outcome, int64_t n) {
  formal_requests_.Add({{"outcome", outcome}}).Increment(static_cast<double>(n));
}

void Metrics::CountInstanceLaunch(const std::string& side) {
  instance_launches_.Add({{"side", side}}).Increment();
}

void Metrics::CountStageReuse(const std::string& stage) {
  stage_reuse_.Add({{"stage", stage}}).Increment();
}

Metrics::~Metrics() = default;

absl::Status Metrics::Listen(const std::string& bind_address) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(bind_address, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve /metrics on ", bind_address, ": ", e.what()));
  }
  exposer_->RegisterCollectable(registry_);
  exposer_->RegisterCollectable(experiments_);
  return absl::OkStatus();
}

absl::Status Metrics::ListenTls(const std::string& host, int port, const std::string& cert_pem,
                                const std::string& key_pem) {
  absl::StatusOr<std::unique_ptr<HttpsMetricsEndpoint>> https = HttpsMetricsEndpoint::Start(
      host, port, cert_pem, key_pem,
      [this] { return prometheus::TextSerializer().Serialize(Collect()); });
  if (!https.ok()) return https.status();
  https_ = std::move(*https);
  return absl::OkStatus();
}

int Metrics::port() const {
  if (https_ != nullptr) return https_->port();
  if (exposer_ == nullptr) return 0;
  std::vector<int> ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void Metrics::RecordRpc(std::string_view method, absl::StatusCode code) {
  rpcs_total_.Add({{"method", std::string(method)}, {"code", absl::StatusCodeToString(code)}})
      .Increment();
}

std::vector<prometheus::MetricFamily> Metrics::Collect() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (auto& family : experiments_->Collect()) families.push_back(std::move(family));
  return families;
}

}  // namespace servelab::service
