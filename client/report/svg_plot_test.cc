#include "client/report/svg_plot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace servelab::client::report {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(NiceTicksTest, RoundStepsCoveringTheRange) {
  EXPECT_THAT(NiceTicks(0, 1, 5),
              ElementsAre(DoubleNear(0, 1e-12), DoubleNear(0.2, 1e-12), DoubleNear(0.4, 1e-12),
                          DoubleNear(0.6, 1e-12), DoubleNear(0.8, 1e-12), DoubleNear(1, 1e-12)));
  std::vector<double> ticks = NiceTicks(1.23, 1.89, 6);
  EXPECT_LE(ticks.front(), 1.23);
  EXPECT_GE(ticks.back(), 1.89);
  EXPECT_NEAR(ticks[1] - ticks[0], 0.1, 1e-12);
  EXPECT_EQ(NiceTicks(3, 3, 5).size(), 2u);  // Degenerate range: still an axis.
}

TEST(FormatTickTest, DecimalsFromStep) {
  EXPECT_EQ(FormatTick(0.25, 0.05), "0.25");
  EXPECT_EQ(FormatTick(150, 50), "150");
  EXPECT_EQ(FormatTick(-1e-17, 0.2), "0.0");
}

TEST(RenderLinePlotTest, StepSeriesBandAndLegend) {
  LinePlot plot;
  plot.id = "cdf-x";
  plot.title = "X <CDF>";
  plot.y_max = 1;
  plot.series.push_back({"exp-1 & co", "#1f77b4", false, true, {{1, 0.5}, {2, 1}}});
  plot.bands.push_back({1.2, 1.8, "steady window", "#9467bd"});
  std::string svg = RenderLinePlot(plot);
  EXPECT_THAT(svg, HasSubstr("<svg id=\"cdf-x\""));
  EXPECT_THAT(svg, HasSubstr("X &lt;CDF&gt;"));
  EXPECT_THAT(svg, HasSubstr("exp-1 &amp; co"));
  EXPECT_THAT(svg, HasSubstr("class=\"band\""));
  // Frame 64..544 x 48..276 over x 1..2: up at x 1 to 0.5, along to x 2, up to 1.
  EXPECT_THAT(svg, HasSubstr("d=\"M64.0 276.0 H64.0 V162.0 H544.0 V48.0\""));
  EXPECT_THAT(svg, Not(HasSubstr("no data")));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
}

TEST(RenderLinePlotTest, SaysWhenEmpty) {
  LinePlot plot;
  plot.id = "empty";
  plot.series.push_back({"exp-1", "#000", false, false, {}});
  std::string svg = RenderLinePlot(plot);
  EXPECT_THAT(svg, HasSubstr("no data"));
  EXPECT_THAT(svg, Not(HasSubstr("<path")));
  EXPECT_THAT(svg, HasSubstr("<rect"));
}

}  // namespace
}  // namespace servelab::client::report
