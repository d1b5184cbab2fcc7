// Fuzzes the daemon's reading of an engine's /metrics page:
// ParsePrometheusText, then SumMetric and HasMetric on what it found.
//
// Input: the page. Checks: every parsed sample's metric is present.
#include "daemon/engines/prometheus_text.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servelab;
  absl::StatusOr<engines::MetricSamples> samples =
      engines::ParsePrometheusText({reinterpret_cast<const char*>(data), size});
  if (!samples.ok()) return 0;
  for (const engines::MetricSample& sample : *samples) {
    SERVELAB_FUZZ_CHECK(engines::HasMetric(*samples, sample.name));
    (void)engines::SumMetric(*samples, sample.name);
  }
  return 0;
}
