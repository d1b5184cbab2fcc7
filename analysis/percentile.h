// Percentiles and summary statistics over latency samples.
//
// Method: linear interpolation between closest ranks (NumPy's default
// "linear", Hyndman & Fan type 7). For sorted samples x[0..n-1] and
// percentile p in [0, 100], h = (n - 1) * p / 100 and the value is
// x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]).
// So p0 is the minimum, p100 the maximum, p50 of {1, 2, 3, 4} is 2.5.
//
//   std::vector<double> s = {0.4, 0.1, 0.3, 0.2};
//   double p90 = Percentile(SortedCopy(s), 90);  // 0.37
//
// Pure functions; thread-compatible.
#ifndef SERVELAB_ANALYSIS_PERCENTILE_H_
#define SERVELAB_ANALYSIS_PERCENTILE_H_

#include <vector>

#include "servelab/v1/result.pb.h"

namespace servelab::analysis {

// `sorted` must be ascending. Returns 0 for an empty sample.
double Percentile(const std::vector<double>& sorted, double p);

std::vector<double> SortedCopy(std::vector<double> samples);

// Mean, p50, p90, p99, max, count and each of `extra_percentiles`. An empty
// sample gives all zeros (count 0).
v1::LatencyStats Summarize(std::vector<double> samples,
                           const std::vector<double>& extra_percentiles = {});

}  // namespace servelab::analysis

#endif  // SERVELAB_ANALYSIS_PERCENTILE_H_
