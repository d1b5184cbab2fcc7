// Small hand-made SVG for the HTML report: a line plot with shaded bands and
// a legend (latency CDFs, requests in flight), and the building blocks the
// stage timeline shares (ticks, coordinates, text). No script, no external
// reference: the markup is inline SVG in an HTML document, so it carries no
// xmlns either.
//
//   LinePlot plot{.id = "cdf-ttft", .title = "TTFT", .x_label = "ms", .y_label = "share"};
//   plot.y_max = 1;
//   plot.series.push_back({.label = "exp-3", .color = "#1f77b4", .step = true,
//                          .points = {{12.5, 0.5}, {20, 1}}});
//   std::string svg = RenderLinePlot(plot);
//
// Output is a pure function of the input (fixed number formats, no ids but
// the one given). Thread-compatible.
#ifndef SERVELAB_CLIENT_REPORT_SVG_PLOT_H_
#define SERVELAB_CLIENT_REPORT_SVG_PLOT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace servelab::client::report {

struct PlotPoint {
  double x = 0;
  double y = 0;
};

struct PlotSeries {
  std::string label;  // Legend text; none when empty.
  std::string color;  // A CSS colour.
  bool dashed = false;
  // A CDF: starts at (first x, 0); at each point's x goes up to its y, then
  // along to the next x. Otherwise straight segments between the points.
  bool step = false;
  std::vector<PlotPoint> points;
};

// A shaded x range spanning the plot's height, e.g. the steady window.
struct PlotBand {
  double from = 0;
  double to = 0;
  std::string label;
  std::string color;
};

struct LinePlot {
  std::string id;  // The <svg> element's id.
  std::string title;
  std::string x_label;
  std::string y_label;
  int width = 560;
  int height = 320;
  // Fixed top of the y axis (1 for a CDF); else from the data. y starts at 0.
  std::optional<double> y_max;
  std::vector<PlotSeries> series;
  std::vector<PlotBand> bands;
  // Drawn in the plot area when no series has a point.
  std::string empty_text = "no data";
};

// One <svg id=...> element with a frame, grid, ticks, bands, lines, legend.
std::string RenderLinePlot(const LinePlot& plot);

// Building blocks.

// About target_count round ticks (steps 1, 2, 5 × 10^k) covering [lo, hi];
// the first <= lo and the last >= hi. lo < hi.
std::vector<double> NiceTicks(double lo, double hi, int target_count);
// A tick value with as many decimals as `step` needs: 0.25 for step 0.05.
std::string FormatTick(double value, double step);
// A coordinate: one decimal.
std::string Coord(double value);
// <text x y [attributes]>escaped text</text>; `attributes` is trusted markup.
std::string SvgText(double x, double y, absl::string_view text, absl::string_view attributes = "");

}  // namespace servelab::client::report

#endif  // SERVELAB_CLIENT_REPORT_SVG_PLOT_H_
