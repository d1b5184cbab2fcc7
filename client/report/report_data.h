// The figures the HTML report draws, computed from raw request records:
// latency samples and their empirical CDFs, requests in flight over time, and
// which run of the load the result's windows describe. The definitions are
// analysis/analysis.h's, so a curve agrees with the stored Result.
//
//   std::vector<double> ttft = LatencySamples(records, Latency::kTtft);
//   std::vector<CdfPoint> cdf = EmpiricalCdf(ttft);  // at most 500 points
//   RunKey run = WindowRun(records);
//   std::vector<InflightPoint> inflight = InflightSeries(records, run);
//
// Pure functions; thread-compatible.
#ifndef SERVELAB_CLIENT_REPORT_REPORT_DATA_H_
#define SERVELAB_CLIENT_REPORT_REPORT_DATA_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "servelab/v1/result.pb.h"

namespace servelab::client::report {

enum class Latency { kTtft, kTpot, kItl, kE2e };

// "TTFT", "TPOT", "ITL", "E2E".
std::string LatencyName(Latency latency);

// Sent (end_ns > 0), no error and HTTP 2xx: analysis' "completed".
bool Completed(const v1::RequestRecord& record);

// Seconds, from completed records only, in record order. TTFT = first_token
// - sent (records with a first token); TPOT = (end - first_token) /
// (completion_tokens - 1) for completion_tokens > 1; ITL = every gap between
// consecutive chunk_ns; E2E = end - sent.
std::vector<double> LatencySamples(const std::vector<v1::RequestRecord>& records, Latency latency);

struct CdfPoint {
  double value = 0;
  // Share of the samples <= value, in (0, 1].
  double fraction = 0;
};

// The empirical CDF: sorted sample i (0-based) of n has fraction (i + 1) / n.
// With more than max_points samples (max_points >= 2), keeps max_points
// evenly spaced ranks, always the first and the last. Empty for no samples.
std::vector<CdfPoint> EmpiricalCdf(std::vector<double> samples, size_t max_points = 500);

// One run of a load: records with equal attempt and repeat (0 read as 1)
// share a load start.
struct RunKey {
  int attempt = 0;
  int repeat = 1;
};

// The run the result's windows describe: the last attempt, its first repeat.
RunKey WindowRun(const std::vector<v1::RequestRecord>& records);

// Wall time of `run`'s load start; nullopt when none of its records has one.
std::optional<absl::Time> LoadStart(const std::vector<v1::RequestRecord>& records, RunKey run);

struct InflightPoint {
  double seconds = 0;  // Since load start.
  int in_flight = 0;
};

// Sent, not yet ended requests of `run` as a step line (two points per
// change). With more than max_points points, each of max_points / 2 equal
// time buckets keeps its lowest and highest value in time order, so dips and
// peaks stay visible.
std::vector<InflightPoint> InflightSeries(const std::vector<v1::RequestRecord>& records, RunKey run,
                                          size_t max_points = 1000);

}  // namespace servelab::client::report

#endif  // SERVELAB_CLIENT_REPORT_REPORT_DATA_H_
