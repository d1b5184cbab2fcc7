#include "client/report/svg_plot.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/report/html_escape.h"

namespace servelab::client::report {
namespace {

constexpr double kMarginLeft = 64;
constexpr double kMarginRight = 16;
constexpr double kMarginTop = 48;  // Title and legend.
constexpr double kMarginBottom = 44;

// Maps data to pixels inside the plot area.
struct Frame {
  double left, top, right, bottom;
  double x_lo, x_hi, y_lo, y_hi;
  std::vector<double> x_ticks, y_ticks;

  double X(double x) const { return left + (x - x_lo) / (x_hi - x_lo) * (right - left); }
  double Y(double y) const { return bottom - (y - y_lo) / (y_hi - y_lo) * (bottom - top); }
};

struct Extent {
  double lo = 0, hi = 0;
  bool empty = true;
  void Add(double v) {
    if (!std::isfinite(v)) return;
    lo = empty ? v : std::min(lo, v);
    hi = empty ? v : std::max(hi, v);
    empty = false;
  }
};

Frame MakeFrame(const LinePlot& plot) {
  Extent x, y;
  for (const auto& s : plot.series) {
    for (const auto& p : s.points) x.Add(p.x), y.Add(p.y);
  }
  for (const auto& b : plot.bands) x.Add(b.from), x.Add(b.to);
  if (x.empty) x = {0, 1, false};
  if (x.hi <= x.lo) {
    double pad = x.lo == 0 ? 1 : std::abs(x.lo) * 0.1;
    x = {x.lo - pad, x.hi + pad, false};
  }
  double y_top = plot.y_max.value_or(y.empty || y.hi <= 0 ? 1 : y.hi);
  Frame f{kMarginLeft, kMarginTop, plot.width - kMarginRight, plot.height - kMarginBottom, 0, 0,
          0,           0};
  f.x_ticks = NiceTicks(x.lo, x.hi, 6);
  f.y_ticks = NiceTicks(0, y_top, 5);
  f.x_lo = f.x_ticks.front();
  f.x_hi = f.x_ticks.back();
  f.y_hi = plot.y_max ? *plot.y_max : f.y_ticks.back();
  return f;
}

void AppendAxes(const LinePlot& plot, const Frame& f, std::string* out) {
  absl::StrAppend(out, "<rect class=\"frame\" x=\"", Coord(f.left), "\" y=\"", Coord(f.top),
                  "\" width=\"", Coord(f.right - f.left), "\" height=\"", Coord(f.bottom - f.top),
                  "\" fill=\"#ffffff\" stroke=\"#999999\"/>");
  double x_step = f.x_ticks.size() > 1 ? f.x_ticks[1] - f.x_ticks[0] : 1;
  for (double t : f.x_ticks) {
    absl::StrAppend(out, "<line class=\"grid\" x1=\"", Coord(f.X(t)), "\" y1=\"", Coord(f.top),
                    "\" x2=\"", Coord(f.X(t)), "\" y2=\"", Coord(f.bottom), "\"/>");
    absl::StrAppend(
        out, SvgText(f.X(t), f.bottom + 14, FormatTick(t, x_step), "text-anchor=\"middle\""));
  }
  double y_step = f.y_ticks.size() > 1 ? f.y_ticks[1] - f.y_ticks[0] : 1;
  for (double t : f.y_ticks) {
    if (t > f.y_hi * (1 + 1e-9)) continue;
    absl::StrAppend(out, "<line class=\"grid\" x1=\"", Coord(f.left), "\" y1=\"", Coord(f.Y(t)),
                    "\" x2=\"", Coord(f.right), "\" y2=\"", Coord(f.Y(t)), "\"/>");
    absl::StrAppend(out,
                    SvgText(f.left - 6, f.Y(t) + 4, FormatTick(t, y_step), "text-anchor=\"end\""));
  }
  absl::StrAppend(out, SvgText((f.left + f.right) / 2, plot.height - 8, plot.x_label,
                               "text-anchor=\"middle\" class=\"axis-label\""));
  absl::StrAppend(out, SvgText(14, (f.top + f.bottom) / 2, plot.y_label,
                               absl::StrCat("text-anchor=\"middle\" class=\"axis-label\" ",
                                            "transform=\"rotate(-90 14 ",
                                            Coord((f.top + f.bottom) / 2), ")\"")));
}

void AppendBands(const LinePlot& plot, const Frame& f, std::string* out) {
  for (const auto& b : plot.bands) {
    double x0 = f.X(std::clamp(std::min(b.from, b.to), f.x_lo, f.x_hi));
    double x1 = f.X(std::clamp(std::max(b.from, b.to), f.x_lo, f.x_hi));
    absl::StrAppend(out, "<rect class=\"band\" x=\"", Coord(x0), "\" y=\"", Coord(f.top),
                    "\" width=\"", Coord(x1 - x0), "\" height=\"", Coord(f.bottom - f.top),
                    "\" fill=\"", HtmlEscape(b.color), "\" fill-opacity=\"0.18\"><title>",
                    HtmlEscape(b.label), "</title></rect>");
  }
}

std::string PathData(const PlotSeries& s, const Frame& f) {
  std::string d;
  if (s.step) {
    absl::StrAppend(&d, "M", Coord(f.X(s.points[0].x)), " ", Coord(f.Y(0)));
    for (const auto& p : s.points) {
      absl::StrAppend(&d, " H", Coord(f.X(p.x)), " V", Coord(f.Y(p.y)));
    }
    return d;
  }
  for (size_t i = 0; i < s.points.size(); ++i) {
    absl::StrAppend(&d, i == 0 ? "M" : " L", Coord(f.X(s.points[i].x)), " ",
                    Coord(f.Y(s.points[i].y)));
  }
  return d;
}

void AppendSeries(const LinePlot& plot, const Frame& f, std::string* out) {
  for (const auto& s : plot.series) {
    if (s.points.empty()) continue;
    absl::StrAppend(out, "<path class=\"series\" d=\"", PathData(s, f),
                    "\" fill=\"none\" stroke=\"", HtmlEscape(s.color), "\" stroke-width=\"1.6\"",
                    s.dashed ? " stroke-dasharray=\"6 3\"" : "", "><title>", HtmlEscape(s.label),
                    "</title></path>");
  }
}

void AppendLegend(const LinePlot& plot, std::string* out) {
  double x = kMarginLeft;
  const double y = 34;
  for (const auto& s : plot.series) {
    if (s.label.empty()) continue;
    absl::StrAppend(out, "<line class=\"legend-line\" x1=\"", Coord(x), "\" y1=\"", Coord(y - 4),
                    "\" x2=\"", Coord(x + 20), "\" y2=\"", Coord(y - 4), "\" stroke=\"",
                    HtmlEscape(s.color), "\" stroke-width=\"2\"",
                    s.dashed ? " stroke-dasharray=\"6 3\"" : "", "/>");
    absl::StrAppend(out, SvgText(x + 24, y, s.label, "class=\"legend\""));
    x += 32 + 7.0 * static_cast<double>(s.label.size());
  }
  for (const auto& b : plot.bands) {
    absl::StrAppend(out, "<rect class=\"legend-swatch\" x=\"", Coord(x), "\" y=\"", Coord(y - 9),
                    "\" width=\"14\" height=\"10\" fill=\"", HtmlEscape(b.color),
                    "\" fill-opacity=\"0.35\"/>");
    absl::StrAppend(out, SvgText(x + 18, y, b.label, "class=\"legend\""));
    x += 26 + 7.0 * static_cast<double>(b.label.size());
  }
}

}  // namespace

std::string RenderLinePlot(const LinePlot& plot) {
  Frame f = MakeFrame(plot);
  std::string out =
      absl::StrCat("<svg id=\"", HtmlEscape(plot.id), "\" class=\"plot\" width=\"", plot.width,
                   "\" height=\"", plot.height, "\" viewBox=\"0 0 ", plot.width, " ", plot.height,
                   "\" role=\"img\" aria-label=\"", HtmlEscape(plot.title), "\"><title>",
                   HtmlEscape(plot.title), "</title>");
  absl::StrAppend(&out, SvgText(kMarginLeft, 16, plot.title, "class=\"plot-title\""));
  AppendAxes(plot, f, &out);
  AppendBands(plot, f, &out);
  AppendSeries(plot, f, &out);
  AppendLegend(plot, &out);
  bool any_point = std::any_of(plot.series.begin(), plot.series.end(),
                               [](const PlotSeries& s) { return !s.points.empty(); });
  if (!any_point) {
    absl::StrAppend(&out, SvgText((f.left + f.right) / 2, (f.top + f.bottom) / 2, plot.empty_text,
                                  "text-anchor=\"middle\" class=\"empty\""));
  }
  absl::StrAppend(&out, "</svg>");
  return out;
}

std::vector<double> NiceTicks(double lo, double hi, int target_count) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi <= lo) return {lo, lo + 1};
  double raw = (hi - lo) / std::max(target_count, 1);
  double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double norm = raw / magnitude;
  double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
  double first = std::floor(lo / step + 1e-9) * step;
  long count = std::lround(std::ceil(hi / step - 1e-9) - std::floor(lo / step + 1e-9));
  std::vector<double> ticks;
  for (long i = 0; i <= std::max(count, 1L); ++i) ticks.push_back(first + i * step);
  return ticks;
}

std::string FormatTick(double value, double step) {
  if (std::abs(value) < std::abs(step) * 1e-9) value = 0;  // No "-0".
  int decimals = step > 0 ? std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9))) : 0;
  return absl::StrFormat("%.*f", decimals, value);
}

std::string Coord(double value) {
  if (std::abs(value) < 0.05) value = 0;
  return absl::StrFormat("%.1f", value);
}

std::string SvgText(double x, double y, absl::string_view text, absl::string_view attributes) {
  return absl::StrCat("<text x=\"", Coord(x), "\" y=\"", Coord(y), "\"",
                      attributes.empty() ? "" : " ", attributes, ">", HtmlEscape(text), "</text>");
}

}  // namespace servelab::client::report
