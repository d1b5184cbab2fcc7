// The tables of the HTML report (html_report.h): each function returns one
// <section> of markup, with every string from the data escaped.
//
//   absl::StrAppend(&html, OverviewSection(input), DecisionSection(input));
//
// Pure functions; thread-compatible.
#ifndef SERVELAB_CLIENT_REPORT_REPORT_TABLES_H_
#define SERVELAB_CLIENT_REPORT_REPORT_TABLES_H_

#include <string>

#include "client/report/html_report.h"

namespace servelab::client::report {

// Id, state, scenario, base, times, spec hash, record counts, and where the
// records came from (the external tool and its version when imported).
std::string OverviewSection(const ReportInput& input);

// Verdict, metric, value against the baseline's, delta, run-to-run spread
// (with more than one run) and each run's value; or why there is none.
std::string DecisionSection(const ReportInput& input);

// Throughput per device and its companions for the whole and the steady
// window, experiment and baseline side by side.
std::string ThroughputSection(const ReportInput& input);

// p50 / p90 / p99 / max of TTFT, TPOT, ITL and E2E from the records.
std::string LatencyTable(const ReportInput& input);

// The exact command each side was launched with (Stage.commands of the
// launch stages), or that the side was reused, skipped or not launched here.
std::string CommandsSection(const ReportInput& input);

// The spec fields changed against the base; empty for a full spec.
std::string ChangesSection(const ReportInput& input);

}  // namespace servelab::client::report

#endif  // SERVELAB_CLIENT_REPORT_REPORT_TABLES_H_
