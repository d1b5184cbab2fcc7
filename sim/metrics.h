// Prometheus text-format building blocks for the sim's /metrics, written by
// hand (not prometheus-cpp) because the sim serves metrics on its own HTTP
// port and the hot path only needs a few adds under the instance model's mutex.
//
// Not thread-safe: the owner (InstanceModel) guards these with its mutex.
#ifndef SERVELAB_SIM_METRICS_H_
#define SERVELAB_SIM_METRICS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"

namespace servelab::sim {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);
  // Appends `# HELP`, `# TYPE` and the _bucket/_sum/_count series; `labels`
  // is the inside of the braces, e.g. `model_name="m"`.
  void Render(absl::string_view name, absl::string_view help, absl::string_view labels,
              std::string& out) const;
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative
  uint64_t count_ = 0;
  double sum_ = 0;
};

// vLLM's bucket layouts, so dashboards built for vLLM read the sim unchanged.
std::vector<double> TtftBuckets();
std::vector<double> E2eBuckets();
std::vector<double> InterTokenBuckets();

// One `# HELP` / `# TYPE` header.
void RenderHeader(absl::string_view name, absl::string_view type, absl::string_view help,
                  std::string& out);
// One sample line: name{labels} value.
void RenderSample(absl::string_view name, absl::string_view labels, double value, std::string& out);
// A label value quoted as the text format wants it: backslash, double quote
// and newline escaped, every other byte as it is. (JSON quoting is not the
// same: its \t and \u00XX escapes fail the parse of the whole scrape.)
std::string QuoteLabelValue(absl::string_view value);

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_METRICS_H_
