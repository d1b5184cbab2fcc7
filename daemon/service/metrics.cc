#include "daemon/service/metrics.h"

#include <exception>
#include <map>

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_type.h>

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
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
      experiments_(std::make_shared<ExperimentsCollector>(control_plane)) {}

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

int Metrics::port() const {
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
