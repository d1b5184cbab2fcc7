// Decision: compares a candidate's result with a baseline's by the spec's
// DecisionRule and gives the delta and a KEEP / DISCARD verdict.
//
//   SERVELAB_ASSIGN_OR_RETURN(v1::Decision d,
//       analysis::Decide(candidate, baseline, "exp-7", spec.analysis().decision()));
//
// rule.metric names a field of WindowResult: a top-level number
// ("output_tokens_per_second_per_device", "goodput", ...) where higher is
// better, or "<latency>.<stat>" ("ttft.p99", "e2e.mean") where lower is
// better. The window is rule.window (unspecified means whole). With
// repeated runs (Result.repeats) each side's value is the mean of its runs,
// and delta_spread the standard error of the relative difference; the
// verdict is INCONCLUSIVE when |delta| <= 2 x delta_spread (run-to-run
// noise). Otherwise KEEP when the improvement (in the metric's better
// direction) is at least rule.min_improvement, else DISCARD.
//
// Errors: INVALID_ARGUMENT for an unknown metric (naming
// analysis.decision.metric) or a zero baseline value. Pure; thread-compatible.
#ifndef SERVELAB_ANALYSIS_DECISION_H_
#define SERVELAB_ANALYSIS_DECISION_H_

#include <string>

#include "absl/status/statusor.h"
#include "servelab/v1/result.pb.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::analysis {

// The value of `metric` (as above) in `window`.
absl::StatusOr<double> MetricValue(const v1::WindowResult& window, const std::string& metric);

// Whether `a` is strictly better than `b` under `rule`: the values Decide
// compares (means, with repeats), in the metric's better direction. Used to
// rank a scenario's experiments for its best.
absl::StatusOr<bool> Better(const v1::Result& a, const v1::Result& b, const v1::DecisionRule& rule);

absl::StatusOr<v1::Decision> Decide(const v1::Result& candidate, const v1::Result& baseline,
                                    const std::string& baseline_experiment_id,
                                    const v1::DecisionRule& rule);

}  // namespace servelab::analysis

#endif  // SERVELAB_ANALYSIS_DECISION_H_
