// Renders a report in headless Chromium: the page must load with nothing
// but the file, draw its charts (the screenshot has their colours), and the
// browser's DOM must hold every chart with its shapes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "client/report/html_report.h"
#include "client/report/testing/png_pixels.h"
#include "client/report/testing/synthetic_report.h"
#include "tests/testing/chromium.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::client::report {
namespace {

using ::servelab::testing::ChromiumDumpDom;
using ::servelab::testing::ChromiumPath;
using ::servelab::testing::ChromiumScreenshot;
using ::servelab::testing::IsOk;
using ::servelab::testing::ReadFile;
using ::servelab::testing::TempDir;
using ::servelab::testing::WriteFile;
using testing::DecodePng;
using testing::DistinctColors;
using ::testing::HasSubstr;
using testing::PixelsNear;
using testing::PngImage;

constexpr int kWidth = 1200;
constexpr int kHeight = 2400;

class HtmlReportRenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ChromiumPath().empty())
      GTEST_SKIP() << "/usr/bin/chromium is missing (apt-get install chromium)";
    report_path_ = dir_.File("report.html");
    WriteFile(report_path_, RenderHtmlReport(testing::SyntheticReport()));
  }

  PngImage Screenshot(const std::string& html_path, const std::string& name) {
    std::string png_path = dir_.File(name);
    EXPECT_THAT(ChromiumScreenshot(html_path, png_path, {.width = kWidth, .height = kHeight}),
                IsOk());
    absl::StatusOr<PngImage> image = DecodePng(ReadFile(png_path));
    EXPECT_THAT(image, IsOk());
    return image.ok() ? *image : PngImage{};
  }

  TempDir dir_;
  std::string report_path_;
};

TEST_F(HtmlReportRenderTest, ScreenshotShowsTheCharts) {
  std::string blank_path = dir_.File("blank.html");
  WriteFile(blank_path, "<!DOCTYPE html><html><body></body></html>");
  PngImage blank = Screenshot(blank_path, "blank.png");
  PngImage report = Screenshot(report_path_, "report.png");
  ASSERT_EQ(report.width, kWidth);
  ASSERT_EQ(report.height, kHeight);
  EXPECT_EQ(DistinctColors(blank), 1u);  // The decoder sees a blank page as one colour.
  EXPECT_GT(DistinctColors(report), 50u);
  EXPECT_GT(ReadFile(dir_.File("report.png")).size(), 3 * ReadFile(dir_.File("blank.png")).size());
  // The experiment's lines (#1f77b4) and the baseline's (#ff7f0e) were drawn.
  EXPECT_GT(PixelsNear(report, {0x1f, 0x77, 0xb4}, 16), 200u);
  EXPECT_GT(PixelsNear(report, {0xff, 0x7f, 0x0e}, 16), 200u);
}

TEST_F(HtmlReportRenderTest, DomHoldsEveryChartWithShapes) {
  absl::StatusOr<std::string> dom = ChromiumDumpDom(report_path_);
  ASSERT_THAT(dom, IsOk());
  for (const char* id : {"timeline", "cdf-ttft", "cdf-tpot", "cdf-itl", "cdf-e2e", "inflight"}) {
    size_t start = dom->find(absl::StrCat("<svg id=\"", id, "\""));
    ASSERT_NE(start, std::string::npos) << id;
    std::string svg = dom->substr(start, dom->find("</svg>", start) - start);
    EXPECT_THAT(svg, HasSubstr("<rect")) << id;
    if (std::string(id) != "timeline") {
      EXPECT_THAT(svg, HasSubstr("<path")) << id;
    }
  }
  EXPECT_THAT(*dom, HasSubstr("<pre class=\"command\">servelab-sim"));
}

}  // namespace
}  // namespace servelab::client::report
