// `servelab report ID --html FILE`: one experiment as a self-contained HTML
// document for people to look at — where the wall time went (stage
// timeline, every second attributed), latency CDFs and requests in flight
// against the baseline, throughput per device of both windows, the decision,
// the spec hash, and the exact launch commands.
//
//   ReportInput input{.experiment = experiment, .records = records,
//                     .generated_at = absl::Now()};
//   WriteFile(path, RenderHtmlReport(input));
//
// The document needs nothing else: no network, no script, no external style
// sheet or font; the charts are inline SVG with the ids timeline, cdf-ttft,
// cdf-tpot, cdf-itl, cdf-e2e and inflight. Every string taken from the data
// is HTML-escaped. The output is a pure function of the input (generated_at
// included), so equal input gives byte-equal output. Thread-compatible.
#ifndef SERVELAB_CLIENT_REPORT_HTML_REPORT_H_
#define SERVELAB_CLIENT_REPORT_HTML_REPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "servelab/v1/experiment.pb.h"
#include "servelab/v1/result.pb.h"

namespace servelab::client::report {

struct ReportInput {
  // From GetExperiment: stages, plan, result, spec, spec_sha256, external.
  v1::Experiment experiment;
  // Its records of result.analyzed_phase (ListRequestRecords), any order.
  std::vector<v1::RequestRecord> records;
  // result.decision.baseline_experiment_id, when there is one.
  std::optional<v1::Experiment> baseline;
  std::vector<v1::RequestRecord> baseline_records;
  // Stamped in the document; also the end of a still running stage.
  absl::Time generated_at;
};

std::string RenderHtmlReport(const ReportInput& input);

}  // namespace servelab::client::report

#endif  // SERVELAB_CLIENT_REPORT_HTML_REPORT_H_
