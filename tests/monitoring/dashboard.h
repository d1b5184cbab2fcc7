// The Grafana dashboard (deploy/grafana/servelab.json) as the tests see it:
// every PromQL expression its panels run, the metric names each one reads,
// and the series names a live /metrics really exposes.
//
//   auto queries = LoadDashboardQueries(SourcePath("deploy/grafana/servelab.json"));
//   for (const DashboardQuery& q : *queries)
//     for (const std::string& name : MetricNamesInPromql(q.expr)) ...
#ifndef SERVELAB_TESTS_MONITORING_DASHBOARD_H_
#define SERVELAB_TESTS_MONITORING_DASHBOARD_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace servelab::testing {

struct DashboardQuery {
  std::string panel;   // The panel's title.
  std::string ref_id;  // The target's refId ("A", "B", ...).
  std::string expr;    // PromQL, with Grafana's $__ variables unexpanded.
};

// Every target of every panel, rows' nested panels included. INVALID_ARGUMENT
// when the file is not JSON or a target has no expr.
absl::StatusOr<std::vector<DashboardQuery>> LoadDashboardQueries(const std::string& path);

// The metric names an expression selects: identifiers that are not
// functions, aggregations, keywords, label names or Grafana variables.
// Names given only through a {__name__="..."} matcher are not seen; the
// dashboard test refuses that form.
std::vector<std::string> MetricNamesInPromql(absl::string_view expr);

// Grafana's interval variables replaced with fixed durations, so the
// expression can be sent to Prometheus as it is.
std::string ExpandGrafanaIntervals(absl::string_view expr);

// The names of the samples in a text exposition (histograms as their
// _bucket/_sum/_count series, counters with their _total).
std::set<std::string> ExposedSeriesNames(absl::string_view exposition);

}  // namespace servelab::testing

#endif  // SERVELAB_TESTS_MONITORING_DASHBOARD_H_
