// Parsing the Prometheus text exposition format (version 0.0.4), as served
// on /metrics by vLLM, SGLang and servelab-sim, into samples, and summing a
// metric over its label sets (vLLM splits counters by model, engine and
// finish reason; the daemon wants one number per instance).
//
//   absl::StatusOr<MetricSamples> m = ParsePrometheusText(body);
//   double running = SumMetric(*m, "vllm:num_requests_running");
//
// Comments (# HELP / # TYPE) are skipped; an optional timestamp after the
// value is ignored; values may be NaN, +Inf, -Inf. A malformed sample line
// is INVALID_ARGUMENT naming the line number. Pure functions, thread-safe.
#ifndef SERVELAB_DAEMON_ENGINES_PROMETHEUS_TEXT_H_
#define SERVELAB_DAEMON_ENGINES_PROMETHEUS_TEXT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace servelab::engines {

struct MetricSample {
  std::string name;
  std::map<std::string, std::string> labels;  // Unescaped values.
  double value = 0;
};

using MetricSamples = std::vector<MetricSample>;

absl::StatusOr<MetricSamples> ParsePrometheusText(absl::string_view text);

// The sum of `name` over all its label sets; 0 when absent.
double SumMetric(const MetricSamples& samples, absl::string_view name);

// Whether any sample of `name` is present (absent and zero differ for
// callers that check an engine speaks the expected metric names).
bool HasMetric(const MetricSamples& samples, absl::string_view name);

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_PROMETHEUS_TEXT_H_
