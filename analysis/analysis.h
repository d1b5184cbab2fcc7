// Analysis: a pure function (raw request records, spec) -> Result. It is
// always run from stored rows, so a re-analysis after a crash or an analysis
// spec change follows exactly the production path (docs/design.md §11).
//
//   SERVELAB_ASSIGN_OR_RETURN(v1::Result result, analysis::Analyze(records, spec));
//   double tok_s = result.whole().output_tokens_per_second();
//
// Definitions (every figure is in seconds or per second):
// - A request was *sent* when end_ns > 0 (every sent request ends, even on
//   error); records never sent (cancelled in the client queue) only count in
//   the phase's request total.
// - A sent request *completed* when error is empty and http_status is 2xx;
//   otherwise it *failed*.
// - Windows describe the analyzed phase: PHASE_FORMAL when any formal record
//   is present, else every record given.
//   - whole: first sent_ns -> last end_ns.
//   - steady: from the first moment the number of in-flight requests (sent,
//     not yet ended) reaches T = ceil(f * C) to the last moment it drops below
//     T, with f = analysis.steady_min_inflight_fraction (0 means 1.0) and C =
//     workload.concurrency. Momentary dips in between (one request ends, the
//     next one starts a few µs later) do not end it. Empty (all zero) when
//     in-flight never reaches T.
//   A request belongs to a window when its end_ns lies inside the window's
//   bounds (inclusive); counts, throughputs and latency samples are taken
//   over the requests that belong, divided by the window's duration.
// - TTFT = first_token - sent; E2E = end - sent; TPOT = (E2E - TTFT) / (out - 1)
//   for out = completion_tokens > 1; ITL = every gap between consecutive
//   chunk arrivals. Percentiles: see percentile.h.
// - Goodput: completed requests meeting every SLO given (an unset SLO does
//   not constrain; the TPOT SLO applies only to requests with out > 1), per
//   second of the window.
// - Per device: device_count = analysis.device_count, or when 0 the number of prefill plus
//   decode devices; per-device figures are 0 when that is 0 too.
// - Schedule lag = sent - planned_send; client queue = queued_ns.
// - Exactness, over completed requests of the analyzed phase: the prompt
//   (completion) is exact when requested_prompt_tokens (requested_completion_tokens)
//   is 0, meaning "no length was asked", or equals the usage figure.
//
// Errors: INVALID_ARGUMENT for an empty record set or a spec value out of
// range (naming its field path). Thread-compatible: no shared state.
#ifndef SERVELAB_ANALYSIS_ANALYSIS_H_
#define SERVELAB_ANALYSIS_ANALYSIS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "servelab/v1/result.pb.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::analysis {

// Reads the analysis parameters from spec.analysis(), the target
// concurrency from spec.workload().concurrency() and the device count as above.
// Result.computed_at is left unset so that a result is a function of its
// inputs only; the caller stamps it.
absl::StatusOr<v1::Result> Analyze(const std::vector<v1::RequestRecord>& records,
                                   const v1::ExperimentSpec& spec);

// The device count used for per-device figures (see above).
int ResolveDeviceCount(const v1::ExperimentSpec& spec);

}  // namespace servelab::analysis

#endif  // SERVELAB_ANALYSIS_ANALYSIS_H_
