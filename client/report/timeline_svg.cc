#include "client/report/timeline_svg.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/report/html_escape.h"
#include "client/report/svg_plot.h"
#include "common/labels.h"

namespace servelab::client::report {
namespace {

constexpr double kWidth = 1100;
constexpr double kLabelWidth = 250;
constexpr double kDurationWidth = 90;
constexpr double kTop = 52;  // Title, caption, legend.
constexpr double kRowHeight = 20;
constexpr double kBottom = 36;
constexpr const char* kGapColor = "#9e9e9e";

absl::Time ToTime(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

bool IsSet(const google::protobuf::Timestamp& ts) { return ts.seconds() != 0 || ts.nanos() != 0; }

std::string StatusColor(v1::StageStatus status) {
  switch (status) {
    case v1::STAGE_STATUS_SUCCEEDED:
      return "#4c78a8";
    case v1::STAGE_STATUS_FAILED:
      return "#d62728";
    case v1::STAGE_STATUS_RUNNING:
      return "#f2a93b";
    case v1::STAGE_STATUS_REUSED:
      return "#59a14f";
    default:
      return "#bab0ac";
  }
}

// Seconds since the start of the drawn domain to pixels.
struct Axis {
  absl::Time origin;
  double lo = 0, hi = 1;
  std::vector<double> ticks;

  double X(absl::Time t) const { return XSeconds(absl::ToDoubleSeconds(t - origin)); }
  double XSeconds(double s) const {
    return kLabelWidth + (s - lo) / (hi - lo) * (kWidth - kLabelWidth - kDurationWidth);
  }
};

Axis MakeAxis(const Attribution& a, const std::vector<WallBand>& bands) {
  Axis axis{a.total.start};
  double hi = absl::ToDoubleSeconds(a.total.end - a.total.start);
  for (const auto& b : bands) {
    axis.lo = std::min(axis.lo, absl::ToDoubleSeconds(b.span.start - axis.origin));
    hi = std::max(hi, absl::ToDoubleSeconds(b.span.end - axis.origin));
  }
  axis.ticks = NiceTicks(axis.lo, std::max(hi, axis.lo + 1e-3), 10);
  axis.lo = axis.ticks.front();
  axis.hi = axis.ticks.back();
  return axis;
}

std::string Rect(double x, double y, double w, double h, absl::string_view attributes) {
  return absl::StrCat("<rect x=\"", Coord(x), "\" y=\"", Coord(y), "\" width=\"",
                      Coord(std::max(w, 1.5)), "\" height=\"", Coord(h), "\" ", attributes, ">");
}

void AppendTicks(const Axis& axis, double bottom, std::string* out) {
  double step = axis.ticks.size() > 1 ? axis.ticks[1] - axis.ticks[0] : 1;
  for (double t : axis.ticks) {
    absl::StrAppend(out, "<line class=\"grid\" x1=\"", Coord(axis.XSeconds(t)), "\" y1=\"",
                    Coord(kTop), "\" x2=\"", Coord(axis.XSeconds(t)), "\" y2=\"", Coord(bottom),
                    "\"/>");
    absl::StrAppend(
        out, SvgText(axis.XSeconds(t), bottom + 14, FormatTick(t, step), "text-anchor=\"middle\""));
  }
  absl::StrAppend(out, SvgText((kLabelWidth + kWidth - kDurationWidth) / 2, bottom + 30,
                               "seconds since the first stage started",
                               "text-anchor=\"middle\" class=\"axis-label\""));
}

void AppendBands(const Axis& axis, const std::vector<WallBand>& bands, double bottom,
                 std::string* out) {
  double legend_x = kLabelWidth;
  for (const auto& b : bands) {
    double x0 = axis.X(b.span.start);
    absl::StrAppend(out,
                    Rect(x0, kTop, axis.X(b.span.end) - x0, bottom - kTop,
                         absl::StrCat("class=\"band\" fill=\"", HtmlEscape(b.color),
                                      "\" fill-opacity=\"0.16\"")),
                    "<title>", HtmlEscape(b.label), " ", FormatSeconds(b.span.end - b.span.start),
                    "</title></rect>");
    absl::StrAppend(out,
                    Rect(legend_x, 36, 14, 10,
                         absl::StrCat("fill=\"", HtmlEscape(b.color), "\" fill-opacity=\"0.4\"")),
                    "</rect>", SvgText(legend_x + 18, 45, b.label, "class=\"legend\""));
    legend_x += 30 + 7.0 * static_cast<double>(b.label.size());
  }
}

void AppendStageRow(const v1::Stage& stage, const Axis& axis, absl::Time now, double y,
                    std::string* out) {
  std::string label = absl::StrCat(StageLabel(stage.name()), " · ", ActionLabel(stage.action()),
                                   " · ", StageStatusLabel(stage.status()));
  if (stage.attempt() > 1) absl::StrAppend(&label, " #", stage.attempt());
  absl::StrAppend(out, SvgText(kLabelWidth - 8, y + 14, label, "text-anchor=\"end\""));
  WallSpan span;
  if (!StageWallSpan(stage, now, &span)) {
    absl::StrAppend(out,
                    SvgText(kWidth - kDurationWidth + 8, y + 14, "not started", "class=\"muted\""));
    return;
  }
  std::string tip = absl::StrCat(label, ": ", FormatSeconds(span.end - span.start));
  if (!stage.reason().empty()) absl::StrAppend(&tip, " — ", stage.reason());
  if (!stage.error().empty()) absl::StrAppend(&tip, " — error: ", stage.error());
  double x0 = axis.X(span.start);
  absl::StrAppend(out,
                  Rect(x0, y + 3, axis.X(span.end) - x0, kRowHeight - 6,
                       absl::StrCat("class=\"stage\" fill=\"", StatusColor(stage.status()), "\"")),
                  "<title>", HtmlEscape(tip), "</title></rect>");
  absl::StrAppend(
      out, SvgText(kWidth - kDurationWidth + 8, y + 14, FormatSeconds(span.end - span.start)));
}

void AppendGapRow(const Attribution& a, const Axis& axis, double y, double bottom,
                  std::string* out) {
  absl::StrAppend(out, SvgText(kLabelWidth - 8, y + 14, "unattributed",
                               "text-anchor=\"end\" class=\"unattributed\""));
  for (const auto& gap : a.gaps) {
    double x0 = axis.X(gap.start);
    double w = axis.X(gap.end) - x0;
    std::string tip = absl::StrCat("unattributed ", FormatSeconds(gap.end - gap.start));
    absl::StrAppend(out,
                    Rect(x0, kTop, w, bottom - kTop,
                         absl::StrCat("fill=\"", kGapColor, "\" fill-opacity=\"0.12\"")),
                    "</rect>");
    absl::StrAppend(
        out,
        Rect(x0, y + 3, w, kRowHeight - 6, absl::StrCat("class=\"gap\" fill=\"", kGapColor, "\"")),
        "<title>", HtmlEscape(tip), "</title></rect>");
  }
  absl::StrAppend(out, SvgText(kWidth - kDurationWidth + 8, y + 14, FormatSeconds(a.unattributed),
                               "class=\"unattributed\""));
}

}  // namespace

bool StageWallSpan(const v1::Stage& stage, absl::Time now, WallSpan* span) {
  if (!IsSet(stage.started_at())) return false;
  span->start = ToTime(stage.started_at());
  if (IsSet(stage.ended_at())) {
    span->end = ToTime(stage.ended_at());
  } else {
    span->end = stage.status() == v1::STAGE_STATUS_RUNNING ? now : span->start;
  }
  span->end = std::max(span->end, span->start);
  return true;
}

Attribution AttributeTime(const google::protobuf::RepeatedPtrField<v1::Stage>& stages,
                          absl::Time now) {
  std::vector<WallSpan> spans;
  for (const auto& stage : stages) {
    WallSpan span;
    if (StageWallSpan(stage, now, &span)) spans.push_back(span);
  }
  Attribution a;
  if (spans.empty()) return a;
  std::sort(spans.begin(), spans.end(),
            [](const WallSpan& x, const WallSpan& y) { return x.start < y.start; });
  a.any_stage = true;
  a.total = spans.front();
  for (const auto& span : spans) {
    if (span.start > a.total.end) {
      a.gaps.push_back({a.total.end, span.start});
      a.unattributed += span.start - a.total.end;
    }
    a.total.end = std::max(a.total.end, span.end);
  }
  a.in_stages = (a.total.end - a.total.start) - a.unattributed;
  return a;
}

std::string RenderStageTimeline(const google::protobuf::RepeatedPtrField<v1::Stage>& stages,
                                const std::vector<WallBand>& bands, absl::Time now) {
  Attribution a = AttributeTime(stages, now);
  const double bottom = kTop + kRowHeight * (stages.size() + 1);
  const double height = bottom + kBottom + 4;
  std::string out = absl::StrFormat(
      "<svg id=\"timeline\" class=\"plot\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
      "role=\"img\" aria-label=\"stage timeline\"><title>stage timeline</title>",
      static_cast<int>(kWidth), static_cast<int>(height), static_cast<int>(kWidth),
      static_cast<int>(height));
  absl::StrAppend(&out, SvgText(8, 16, "Stage timeline", "class=\"plot-title\""));
  if (!a.any_stage) {
    absl::StrAppend(&out, "<rect class=\"frame\" x=\"0\" y=\"0\" width=\"1\" height=\"1\" ",
                    "fill=\"none\"/>", SvgText(8, 32, "no stage has started", "class=\"empty\""),
                    "</svg>");
    return out;
  }
  absl::StrAppend(&out, SvgText(8, 30,
                                absl::StrCat("total ", FormatSeconds(a.total.end - a.total.start),
                                             " = stages ", FormatSeconds(a.in_stages),
                                             " + unattributed ", FormatSeconds(a.unattributed)),
                                "class=\"caption\""));
  Axis axis = MakeAxis(a, bands);
  AppendTicks(axis, bottom, &out);
  AppendBands(axis, bands, bottom, &out);
  double y = kTop;
  for (const auto& stage : stages) {
    AppendStageRow(stage, axis, now, y, &out);
    y += kRowHeight;
  }
  AppendGapRow(a, axis, y, bottom, &out);
  absl::StrAppend(&out, "</svg>");
  return out;
}

std::string FormatSeconds(absl::Duration d) {
  return absl::StrFormat("%.2f s", absl::ToDoubleSeconds(d));
}

}  // namespace servelab::client::report
