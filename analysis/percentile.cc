#include "analysis/percentile.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace servelab::analysis {

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  p = std::clamp(p, 0.0, 100.0);
  double h = static_cast<double>(sorted.size() - 1) * p / 100.0;
  size_t lo = static_cast<size_t>(std::floor(h));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

std::vector<double> SortedCopy(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples;
}

v1::LatencyStats Summarize(std::vector<double> samples,
                           const std::vector<double>& extra_percentiles) {
  v1::LatencyStats stats;
  std::sort(samples.begin(), samples.end());
  stats.set_count(static_cast<int64_t>(samples.size()));
  if (!samples.empty()) {
    stats.set_mean(std::accumulate(samples.begin(), samples.end(), 0.0) /
                   static_cast<double>(samples.size()));
    stats.set_p50(Percentile(samples, 50));
    stats.set_p90(Percentile(samples, 90));
    stats.set_p99(Percentile(samples, 99));
    stats.set_max(samples.back());
  }
  for (double p : extra_percentiles) {
    v1::PercentileValue* value = stats.add_percentiles();
    value->set_percentile(p);
    value->set_value(Percentile(samples, p));
  }
  return stats;
}

}  // namespace servelab::analysis
