#include "client/report/html_report.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/report/html_escape.h"
#include "client/report/report_data.h"
#include "client/report/report_tables.h"
#include "client/report/svg_plot.h"
#include "client/report/timeline_svg.h"

namespace servelab::client::report {
namespace {

constexpr const char* kExperimentColor = "#1f77b4";
constexpr const char* kBaselineColor = "#ff7f0e";
constexpr const char* kFormalColor = "#2ca02c";
constexpr const char* kSteadyColor = "#9467bd";
constexpr size_t kCdfPoints = 500;
constexpr size_t kInflightPoints = 1000;

// System fonts only: the document must render with no network.
constexpr const char* kStyle = R"css(
body { font: 14px/1.4 sans-serif; color: #222; margin: 24px; max-width: 1140px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; } h3 { font-size: 15px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
table.grid td { text-align: right; font-variant-numeric: tabular-nums; }
tr.window th { background: #f3f3f3; }
pre.command { background: #f6f8fa; border: 1px solid #ddd; padding: 8px; white-space: pre-wrap;
  word-break: break-all; font-size: 12px; }
.muted { color: #777; } .error { color: #b00020; } .notice { color: #8a5a00; }
.verdict { font-weight: bold; } .verdict-keep { color: #1a7f37; }
.verdict-discard { color: #b00020; } .verdict-inconclusive { color: #8a5a00; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
svg.plot { background: #fff; border: 1px solid #eee; }
svg text { font: 11px sans-serif; fill: #333; }
svg text.plot-title { font-size: 13px; font-weight: bold; }
svg text.muted, svg text.unattributed, svg text.empty { fill: #777; }
svg line.grid { stroke: #eee; }
)css";

std::optional<WallSpan> WindowWallSpan(absl::Time load_start, const v1::WindowResult& w) {
  if (w.end_seconds() <= w.start_seconds()) return std::nullopt;
  return WallSpan{load_start + absl::Seconds(w.start_seconds()),
                  load_start + absl::Seconds(w.end_seconds())};
}

std::string TimelineSection(const ReportInput& input) {
  const v1::Experiment& e = input.experiment;
  std::vector<WallBand> bands;
  std::string note;
  std::optional<absl::Time> load_start = LoadStart(input.records, WindowRun(input.records));
  if (load_start) {
    if (auto span = WindowWallSpan(*load_start, e.result().whole())) {
      bands.push_back({*span, "formal window", kFormalColor});
    }
    if (auto span = WindowWallSpan(*load_start, e.result().steady())) {
      bands.push_back({*span, "steady window", kSteadyColor});
    }
  } else {
    note = "<p class=\"muted\">Windows not shaded: no record carries a load start.</p>";
  }
  Attribution a = AttributeTime(e.stages(), input.generated_at);
  std::string summary =
      a.any_stage
          ? absl::StrCat("<p>Total ", FormatSeconds(a.total.end - a.total.start), ": stages ",
                         FormatSeconds(a.in_stages), ", unattributed ",
                         FormatSeconds(a.unattributed), " in ", a.gaps.size(), " gap(s).</p>")
          : std::string("<p class=\"muted\">No stage has started.</p>");
  return absl::StrCat("<section id=\"stages\"><h2>Where the time went</h2>", summary,
                      RenderStageTimeline(e.stages(), bands, input.generated_at), note,
                      "</section>");
}

PlotSeries CdfSeries(const std::string& id, std::vector<double> samples, double scale,
                     const char* color, bool dashed) {
  PlotSeries series{absl::StrCat(id, " (n=", samples.size(), ")"), color, dashed, true, {}};
  for (const CdfPoint& p : EmpiricalCdf(std::move(samples), kCdfPoints)) {
    series.points.push_back({p.value * scale, p.fraction});
  }
  return series;
}

std::string CdfPlot(const ReportInput& input, Latency latency, const std::string& id) {
  std::vector<double> exp = LatencySamples(input.records, latency);
  std::vector<double> base;
  if (input.baseline) base = LatencySamples(input.baseline_records, latency);
  double max_value = 0;
  for (double v : exp) max_value = std::max(max_value, v);
  for (double v : base) max_value = std::max(max_value, v);
  // Milliseconds unless some sample reaches a second.
  bool in_ms = max_value < 1.0;
  double scale = in_ms ? 1e3 : 1.0;
  std::string name = LatencyName(latency);
  LinePlot plot;
  plot.id = id;
  plot.title = absl::StrCat(name, " CDF");
  plot.x_label = absl::StrCat(name, in_ms ? " (ms)" : " (s)");
  plot.y_label = "share of samples";
  plot.y_max = 1;
  plot.empty_text = "no completed request";
  plot.series.push_back(
      CdfSeries(input.experiment.id(), std::move(exp), scale, kExperimentColor, false));
  if (input.baseline) {
    plot.series.push_back(
        CdfSeries(input.baseline->id(), std::move(base), scale, kBaselineColor, true));
  }
  return RenderLinePlot(plot);
}

std::string LatencySection(const ReportInput& input) {
  std::string out = "<section id=\"latency\"><h2>Latency</h2><div class=\"charts\">";
  absl::StrAppend(
      &out, CdfPlot(input, Latency::kTtft, "cdf-ttft"), CdfPlot(input, Latency::kTpot, "cdf-tpot"),
      CdfPlot(input, Latency::kItl, "cdf-itl"), CdfPlot(input, Latency::kE2e, "cdf-e2e"));
  absl::StrAppend(&out, "</div><p class=\"muted\">Every completed request of every run.</p>",
                  LatencyTable(input), "</section>");
  return out;
}

PlotSeries InflightLine(const std::string& id, const std::vector<v1::RequestRecord>& records,
                        const char* color, bool dashed) {
  RunKey run = WindowRun(records);
  PlotSeries series{absl::StrCat(id, " (run ", run.repeat, ")"), color, dashed, false, {}};
  for (const InflightPoint& p : InflightSeries(records, run, kInflightPoints)) {
    series.points.push_back({p.seconds, static_cast<double>(p.in_flight)});
  }
  return series;
}

std::string InflightSection(const ReportInput& input) {
  const v1::WindowResult& steady = input.experiment.result().steady();
  LinePlot plot;
  plot.id = "inflight";
  plot.title = "Requests in flight";
  plot.x_label = "seconds since load start";
  plot.y_label = "requests in flight";
  plot.width = 1100;
  plot.empty_text = "no request was sent";
  plot.series.push_back(
      InflightLine(input.experiment.id(), input.records, kExperimentColor, false));
  if (input.baseline) {
    plot.series.push_back(
        InflightLine(input.baseline->id(), input.baseline_records, kBaselineColor, true));
  }
  if (steady.end_seconds() > steady.start_seconds()) {
    plot.bands.push_back(
        {steady.start_seconds(), steady.end_seconds(), "steady window", kSteadyColor});
  }
  return absl::StrCat("<section id=\"load\"><h2>Requests in flight</h2>", RenderLinePlot(plot),
                      "</section>");
}

}  // namespace

std::string RenderHtmlReport(const ReportInput& input) {
  const std::string id = HtmlEscape(input.experiment.id());
  std::string html = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>servelab report ",
      id, "</title><style>", kStyle, "</style></head><body><h1>servelab report: ", id, "</h1>");
  if (input.records.empty()) {
    absl::StrAppend(&html, "<p class=\"notice\" id=\"no-records\">No records: this experiment ",
                    "has no stored request records, so the charts are empty.</p>");
  }
  absl::StrAppend(&html, OverviewSection(input), DecisionSection(input), ThroughputSection(input),
                  TimelineSection(input), LatencySection(input), InflightSection(input),
                  CommandsSection(input), ChangesSection(input), "</body></html>\n");
  return html;
}

}  // namespace servelab::client::report
