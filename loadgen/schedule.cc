#include "loadgen/schedule.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "loadgen/random.h"

namespace servelab::loadgen {
namespace {

constexpr uint64_t kArrivalStream = 0xa11;

double Exponential(KeyedRandom& rng) { return -std::log1p(-rng.NextDouble()); }

double Normal(KeyedRandom& rng) {
  // Box-Muller; 1 - u keeps the log argument in (0, 1].
  double u = 1.0 - rng.NextDouble(), v = rng.NextDouble();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
}

// Gamma(shape, 1) by Marsaglia & Tsang; shape < 1 via the boost
// Gamma(shape + 1) * U^(1/shape).
double Gamma(KeyedRandom& rng, double shape) {
  if (shape < 1) {
    double u = 1.0 - rng.NextDouble();
    return Gamma(rng, shape + 1) * std::pow(u, 1.0 / shape);
  }
  double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x = Normal(rng), v = 1.0 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    double u = 1.0 - rng.NextDouble();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> PlanArrivals(const v1::WorkloadSpec& workload, int count) {
  double rate = workload.request_rate();
  if (!(rate >= 0) || std::isinf(rate)) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.request_rate must be >= 0, got ", rate));
  }
  if (!(workload.burstiness() >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.burstiness must be >= 0, got ", workload.burstiness()));
  }
  if (count < 0) return absl::InvalidArgumentError("request count must be >= 0");
  std::vector<int64_t> planned(static_cast<size_t>(count), 0);
  if (rate == 0) return planned;
  KeyedRandom rng(static_cast<uint64_t>(workload.dataset().seed()), kArrivalStream, 0);
  double shape = workload.burstiness() > 0 ? workload.burstiness() : 1.0;
  double t_seconds = 0;
  for (int i = 1; i < count; ++i) {
    double gap;
    switch (workload.arrival()) {
      case v1::ARRIVAL_CONSTANT:
        // Exact multiples of 1/rate: no drift from summing rounded gaps.
        planned[static_cast<size_t>(i)] = static_cast<int64_t>(std::llround(i * 1e9 / rate));
        continue;
      case v1::ARRIVAL_GAMMA:
        gap = Gamma(rng, shape) / (shape * rate);
        break;
      default:
        gap = Exponential(rng) / rate;
        break;
    }
    t_seconds += gap;
    planned[static_cast<size_t>(i)] = static_cast<int64_t>(std::llround(t_seconds * 1e9));
  }
  return planned;
}

}  // namespace servelab::loadgen
