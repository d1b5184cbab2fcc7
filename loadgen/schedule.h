// Arrival schedules: the planned send time of every request, from the
// WorkloadSpec only, deterministic for a given seed.
//
//   SERVELAB_ASSIGN_OR_RETURN(std::vector<int64_t> planned,
//                             loadgen::PlanArrivals(spec.workload(), n));
//
// Times are nanoseconds since load start; the first request is planned at 0.
// - request_rate 0: every request at 0 (as fast as the concurrency cap allows).
// - ARRIVAL_POISSON (or unspecified): exponential gaps with mean 1/rate.
// - ARRIVAL_CONSTANT: gaps of exactly 1/rate.
// - ARRIVAL_GAMMA: gamma gaps with shape = burstiness (default 1, i.e.
//   poisson) and mean 1/rate; burstiness < 1 is burstier, > 1 more regular.
// The seed is workload.dataset.seed (one seed per workload).
//
// Errors: INVALID_ARGUMENT for a negative rate or burstiness, or count < 0,
// naming the spec field. Pure; thread-compatible.
#ifndef SERVELAB_LOADGEN_SCHEDULE_H_
#define SERVELAB_LOADGEN_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::loadgen {

absl::StatusOr<std::vector<int64_t>> PlanArrivals(const v1::WorkloadSpec& workload, int count);

}  // namespace servelab::loadgen

#endif  // SERVELAB_LOADGEN_SCHEDULE_H_
