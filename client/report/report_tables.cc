#include "client/report/report_tables.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "analysis/percentile.h"
#include "client/report/html_escape.h"
#include "client/report/report_data.h"
#include "common/labels.h"

namespace servelab::client::report {
namespace {

std::string Row(absl::string_view header, absl::string_view cell_html) {
  return absl::StrCat("<tr><th>", HtmlEscape(header), "</th><td>", cell_html, "</td></tr>");
}

std::string FormatTimestamp(const google::protobuf::Timestamp& ts) {
  if (ts.seconds() == 0 && ts.nanos() == 0) return "-";
  absl::Time t = absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

// labels.h has no form for Window; this is the same rule (name less its
// prefix, lower case): "whole", "steady".
std::string WindowLabel(v1::Window window) {
  absl::string_view name = v1::Window_Name(window);
  if (!absl::ConsumePrefix(&name, "WINDOW_")) return "unknown";
  return absl::AsciiStrToLower(name);
}

std::string RecordCounts(const std::vector<v1::RequestRecord>& records) {
  if (records.empty()) return "no records";
  int64_t completed = std::count_if(records.begin(), records.end(), Completed);
  int64_t sent = std::count_if(records.begin(), records.end(),
                               [](const v1::RequestRecord& r) { return r.end_ns() > 0; });
  return absl::StrCat(records.size(), " ", PhaseLabel(records.front().phase()),
                      " records: ", completed, " completed, ", sent - completed, " failed, ",
                      records.size() - sent, " never sent");
}

std::string Source(const v1::Experiment& e) {
  if (!e.has_external()) return "measured by servelab";
  const v1::ExternalSource& x = e.external();
  std::string text =
      absl::StrCat("imported from ", x.tool(), " ",
                   x.tool_version().empty() ? "(version not stated)" : x.tool_version());
  if (!x.file_name().empty()) absl::StrAppend(&text, ", file ", x.file_name());
  return HtmlEscape(text);
}

std::string Percent(double fraction) { return absl::StrFormat("%+.2f%%", fraction * 100); }

}  // namespace

std::string OverviewSection(const ReportInput& input) {
  const v1::Experiment& e = input.experiment;
  std::string state = StateLabel(e.state());
  if (e.state() == v1::EXPERIMENT_STATE_FAILED) {
    absl::StrAppend(&state, " (", v1::FailureClass_Name(e.failure_class()), ")");
  }
  std::string rows;
  absl::StrAppend(&rows, Row("experiment", HtmlEscape(e.id())), Row("state", HtmlEscape(state)),
                  Row("scenario", HtmlEscape(e.spec().scenario())),
                  Row("base", e.base_id().empty() ? "none (full spec)" : HtmlEscape(e.base_id())),
                  Row("submitted", FormatTimestamp(e.submitted_at())));
  absl::StrAppend(
      &rows,
      Row("report generated",
          absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", input.generated_at, absl::UTCTimeZone())),
      Row("spec sha256", absl::StrCat("<code>", HtmlEscape(e.spec_sha256()), "</code>")),
      Row("records", HtmlEscape(RecordCounts(input.records))), Row("source", Source(e)),
      Row("baseline", input.baseline ? HtmlEscape(input.baseline->id()) : "none"));
  if (!e.blocker().empty()) absl::StrAppend(&rows, Row("blocker", HtmlEscape(e.blocker())));
  return absl::StrCat("<section id=\"overview\"><h2>Overview</h2><table class=\"kv\">", rows,
                      "</table></section>");
}

namespace {

std::string RepeatsTable(const ReportInput& input) {
  std::map<int, std::pair<const v1::RepeatResult*, const v1::RepeatResult*>> by_repeat;
  for (const auto& r : input.experiment.result().repeats()) by_repeat[r.repeat()].first = &r;
  if (input.baseline) {
    for (const auto& r : input.baseline->result().repeats()) by_repeat[r.repeat()].second = &r;
  }
  if (by_repeat.empty()) return "";
  auto cells = [](const v1::RepeatResult* r) {
    if (r == nullptr) return std::string("<td>-</td><td>-</td>");
    return absl::StrFormat("<td>%.4f</td><td>%d / %d</td>", r->value(), r->requests_completed(),
                           r->requests_failed());
  };
  std::string rows;
  for (const auto& [repeat, sides] : by_repeat) {
    absl::StrAppend(&rows, "<tr><th>", repeat, "</th>", cells(sides.first), cells(sides.second),
                    "</tr>");
  }
  return absl::StrCat(
      "<h3>Per run</h3><table id=\"repeats\" class=\"grid\"><tr><th>run</th>"
      "<th>experiment</th><th>completed / failed</th><th>baseline</th>"
      "<th>completed / failed</th></tr>",
      rows, "</table>");
}

}  // namespace

std::string DecisionSection(const ReportInput& input) {
  const v1::Result& result = input.experiment.result();
  const v1::Decision& d = result.decision();
  const v1::DecisionRule& rule = input.experiment.spec().analysis().decision();
  std::string out = "<section id=\"decision\"><h2>Decision</h2>";
  if (d.baseline_experiment_id().empty()) {
    absl::StrAppend(&out, "<p class=\"notice\">No decision: there is no baseline to compare ",
                    "with.</p>", RepeatsTable(input), "</section>");
    return out;
  }
  std::string verdict = VerdictLabel(d.verdict());
  std::string rows;
  absl::StrAppend(
      &rows,
      Row("verdict", absl::StrCat("<span class=\"verdict verdict-", HtmlEscape(verdict), "\">",
                                  HtmlEscape(verdict), "</span>")),
      Row("metric",
          HtmlEscape(absl::StrCat(d.metric(), " (", WindowLabel(rule.window()), " window)"))),
      Row("value", absl::StrFormat("%.4f vs %.4f of baseline %s", d.value(), d.baseline_value(),
                                   HtmlEscape(d.baseline_experiment_id()))),
      Row("delta", Percent(d.delta_fraction())));
  if (d.repeats() > 1 || d.baseline_repeats() > 1) {
    absl::StrAppend(&rows, Row("spread", absl::StrFormat("±%.2f%% (runs: %d vs %d); a verdict "
                                                         "needs |delta| above twice the spread",
                                                         d.delta_spread() * 100, d.repeats(),
                                                         d.baseline_repeats())));
  }
  absl::StrAppend(&rows, Row("rule", absl::StrFormat("keep needs an improvement of at least %.2f%%",
                                                     rule.min_improvement() * 100)));
  absl::StrAppend(&out, "<table class=\"kv\">", rows, "</table>", RepeatsTable(input),
                  "</section>");
  return out;
}

namespace {

struct Figure {
  const char* name;
  double (*get)(const v1::WindowResult&);
  int decimals;
  bool compare;  // Show the relative difference.
};

constexpr Figure kFigures[] = {
    {"output tok/s per device",
     [](const v1::WindowResult& w) { return w.output_tokens_per_second_per_device(); }, 4, true},
    {"output tok/s", [](const v1::WindowResult& w) { return w.output_tokens_per_second(); }, 2,
     true},
    {"requests/s", [](const v1::WindowResult& w) { return w.request_throughput(); }, 3, true},
    {"goodput (requests/s)", [](const v1::WindowResult& w) { return w.goodput(); }, 3, true},
    {"requests completed",
     [](const v1::WindowResult& w) { return static_cast<double>(w.requests_completed()); }, 0,
     false},
    {"requests failed",
     [](const v1::WindowResult& w) { return static_cast<double>(w.requests_failed()); }, 0, false},
    {"duration (s)", [](const v1::WindowResult& w) { return w.duration_seconds(); }, 2, false},
    {"from (s since load start)", [](const v1::WindowResult& w) { return w.start_seconds(); }, 2,
     false},
    {"to (s since load start)", [](const v1::WindowResult& w) { return w.end_seconds(); }, 2,
     false},
};

std::string WindowRows(const char* window, const v1::WindowResult& exp,
                       const v1::WindowResult* base) {
  std::string rows =
      absl::StrCat("<tr class=\"window\"><th colspan=\"4\">", window, " window</th></tr>");
  for (const Figure& f : kFigures) {
    double value = f.get(exp);
    std::string base_cell = "-", delta_cell;
    if (base != nullptr) {
      double b = f.get(*base);
      base_cell = absl::StrFormat("%.*f", f.decimals, b);
      if (f.compare && b > 0) delta_cell = Percent((value - b) / b);
    }
    absl::StrAppend(&rows, "<tr><th>", f.name, "</th><td>",
                    absl::StrFormat("%.*f", f.decimals, value), "</td><td>", base_cell, "</td><td>",
                    delta_cell, "</td></tr>");
  }
  return rows;
}

}  // namespace

std::string ThroughputSection(const ReportInput& input) {
  const v1::Result& exp = input.experiment.result();
  const v1::Result* base = input.baseline ? &input.baseline->result() : nullptr;
  std::string header = absl::StrCat(
      "<tr><th>figure</th><th>", HtmlEscape(input.experiment.id()), "</th><th>",
      base ? HtmlEscape(input.baseline->id()) : "baseline", "</th><th>delta</th></tr>");
  std::string devices = absl::StrCat("<tr><th>devices</th><td>", exp.device_count(), "</td><td>",
                                     base ? absl::StrCat(base->device_count()) : std::string("-"),
                                     "</td><td></td></tr>");
  return absl::StrCat("<section id=\"throughput\"><h2>Throughput</h2>",
                      "<table class=\"grid\" id=\"throughput-table\">", header, devices,
                      WindowRows("whole", exp.whole(), base ? &base->whole() : nullptr),
                      WindowRows("steady", exp.steady(), base ? &base->steady() : nullptr),
                      "</table></section>");
}

namespace {

std::string LatencyCells(std::vector<double> samples) {
  if (samples.empty()) return "<td>0</td><td>-</td><td>-</td><td>-</td><td>-</td>";
  std::vector<double> sorted = analysis::SortedCopy(std::move(samples));
  return absl::StrFormat("<td>%d</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td>",
                         sorted.size(), analysis::Percentile(sorted, 50) * 1e3,
                         analysis::Percentile(sorted, 90) * 1e3,
                         analysis::Percentile(sorted, 99) * 1e3, sorted.back() * 1e3);
}

}  // namespace

std::string LatencyTable(const ReportInput& input) {
  std::string rows;
  for (Latency latency : {Latency::kTtft, Latency::kTpot, Latency::kItl, Latency::kE2e}) {
    absl::StrAppend(&rows, "<tr><th>", LatencyName(latency), "</th><td>",
                    HtmlEscape(input.experiment.id()), "</td>",
                    LatencyCells(LatencySamples(input.records, latency)), "</tr>");
    if (!input.baseline) continue;
    absl::StrAppend(&rows, "<tr><th></th><td>", HtmlEscape(input.baseline->id()), "</td>",
                    LatencyCells(LatencySamples(input.baseline_records, latency)), "</tr>");
  }
  return absl::StrCat(
      "<table class=\"grid\" id=\"latency-table\"><tr><th>latency (ms)</th><th>experiment</th>"
      "<th>samples</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>",
      rows, "</table>");
}

namespace {

struct LaunchStage {
  v1::Side side;
  v1::StageName stage;
};

constexpr LaunchStage kLaunchStages[] = {
    {v1::SIDE_PREFILL, v1::STAGE_LAUNCH_PREFILL},
    {v1::SIDE_DECODE, v1::STAGE_LAUNCH_DECODE},
    {v1::SIDE_ROUTER, v1::STAGE_LAUNCH_ROUTER},
};

// The latest attempt of `name`, or null.
const v1::Stage* LatestStage(const v1::Experiment& e, v1::StageName name) {
  const v1::Stage* latest = nullptr;
  for (const auto& stage : e.stages()) {
    if (stage.name() == name && (latest == nullptr || stage.attempt() >= latest->attempt())) {
      latest = &stage;
    }
  }
  return latest;
}

std::string NotLaunched(const v1::Experiment& e, const v1::Stage* stage) {
  if (stage == nullptr) {
    if (e.has_external()) {
      return absl::StrCat("not launched: the records were imported from ", e.external().tool());
    }
    return "reused: not launched by this experiment";
  }
  if (stage->action() == v1::STAGE_ACTION_REUSE || stage->status() == v1::STAGE_STATUS_REUSED) {
    std::string text = "reused: launched by an earlier experiment";
    if (!e.plan().planned_against().empty()) {
      absl::StrAppend(&text, " (the hot deployment held ", e.plan().planned_against(), ")");
    }
    return text;
  }
  if (stage->action() == v1::STAGE_ACTION_SKIP || stage->status() == v1::STAGE_STATUS_SKIPPED) {
    return absl::StrCat("skipped", stage->reason().empty() ? "" : ": ", stage->reason());
  }
  if (stage->commands().empty()) {
    return stage->status() == v1::STAGE_STATUS_PENDING ? "not launched yet"
                                                       : "launched; no command was recorded";
  }
  return "";
}

std::string SideCommands(const v1::Experiment& e, const LaunchStage& launch) {
  const v1::Stage* stage = LatestStage(e, launch.stage);
  std::string out = absl::StrCat("<h3>", SideLabel(launch.side), "</h3>");
  std::string not_launched = NotLaunched(e, stage);
  if (!not_launched.empty()) {
    absl::StrAppend(&out, "<p class=\"muted\">", HtmlEscape(not_launched), "</p>");
    return out;
  }
  for (const auto& command : stage->commands()) {
    if (!command.error().empty()) {
      absl::StrAppend(&out, "<p class=\"error\">", HtmlEscape(SideLabel(command.side())),
                      ": cannot render: ", HtmlEscape(command.error()), "</p>");
      continue;
    }
    absl::StrAppend(&out, "<pre class=\"command\">", HtmlEscape(command.text()), "</pre>");
  }
  return out;
}

}  // namespace

std::string CommandsSection(const ReportInput& input) {
  std::string out = "<section id=\"commands\"><h2>Launch commands</h2>";
  for (const LaunchStage& launch : kLaunchStages) {
    absl::StrAppend(&out, SideCommands(input.experiment, launch));
  }
  absl::StrAppend(&out, "</section>");
  return out;
}

std::string ChangesSection(const ReportInput& input) {
  const v1::Experiment& e = input.experiment;
  if (e.changes().empty()) return "";
  std::string rows;
  for (const auto& change : e.changes()) {
    absl::StrAppend(&rows, "<tr><td><code>", HtmlEscape(change.path()), "</code></td><td><code>",
                    HtmlEscape(change.old_value()), "</code></td><td><code>",
                    HtmlEscape(change.new_value()), "</code></td></tr>");
  }
  return absl::StrCat("<section id=\"changes\"><h2>Changes against ", HtmlEscape(e.base_id()),
                      "</h2><table class=\"grid\"><tr><th>field</th><th>was</th><th>now</th></tr>",
                      rows, "</table></section>");
}

}  // namespace servelab::client::report
