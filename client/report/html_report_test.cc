#include "client/report/html_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "client/report/testing/synthetic_report.h"

namespace servelab::client::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::SyntheticReport;

constexpr const char* kSvgIds[] = {"timeline", "cdf-ttft", "cdf-tpot",
                                   "cdf-itl",  "cdf-e2e",  "inflight"};

// The markup of <svg id="id">, up to its </svg>.
std::string SvgElement(const std::string& html, const std::string& id) {
  size_t start = html.find(absl::StrCat("<svg id=\"", id, "\""));
  if (start == std::string::npos) return "";
  return html.substr(start, html.find("</svg>", start) - start);
}

TEST(HtmlReportTest, HasEveryChartWithShapes) {
  std::string html = RenderHtmlReport(SyntheticReport());
  EXPECT_THAT(html, HasSubstr("<!DOCTYPE html>"));
  for (const char* id : kSvgIds) {
    std::string svg = SvgElement(html, id);
    ASSERT_FALSE(svg.empty()) << id;
    EXPECT_THAT(svg, HasSubstr("<rect")) << id;
    if (std::string(id) != "timeline") {
      EXPECT_THAT(svg, HasSubstr("<path")) << id;
    }
  }
}

TEST(HtmlReportTest, ReferencesNothingOutside) {
  std::string html = RenderHtmlReport(SyntheticReport());
  for (const char* reference :
       {"http://", "https://", "src=", "href=", "<link", "@import", "url(", "<script", "xmlns"}) {
    EXPECT_THAT(html, Not(HasSubstr(reference))) << reference;
  }
}

TEST(HtmlReportTest, EscapesStringsFromTheData) {
  ReportInput input = SyntheticReport();
  input.experiment.set_id("exp-<7>");
  input.experiment.mutable_stages(3)->mutable_commands(0)->set_text(
      "sim --arg '<script>alert(\"x\")</script>' & more");
  v1::RenderedCommand* bad = input.experiment.mutable_stages(3)->add_commands();
  bad->set_side(v1::SIDE_DECODE);
  bad->set_error("deployment.decode.model: <empty>");
  input.experiment.mutable_stages(0)->set_error("<b>boom</b>");
  std::string html = RenderHtmlReport(input);
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<b>")));
  EXPECT_THAT(html, Not(HasSubstr("exp-<7>")));
  EXPECT_THAT(html, HasSubstr("exp-&lt;7&gt;"));
  EXPECT_THAT(html, HasSubstr("sim --arg &#39;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
                              "&#39; &amp; more"));
  EXPECT_THAT(html, HasSubstr("deployment.decode.model: &lt;empty&gt;"));
  EXPECT_THAT(html, HasSubstr("&lt;b&gt;boom&lt;/b&gt;"));
}

TEST(HtmlReportTest, SameInputSameBytes) {
  EXPECT_EQ(RenderHtmlReport(SyntheticReport()), RenderHtmlReport(SyntheticReport()));
}

TEST(HtmlReportTest, AttributesEveryStageSecond) {
  std::string html = RenderHtmlReport(SyntheticReport());
  // Stages span 0..81.3 s with gaps 0.5..1 s and 17..20 s.
  EXPECT_THAT(html, HasSubstr("total 81.30 s = stages 77.80 s + unattributed 3.50 s"));
  EXPECT_THAT(html, HasSubstr("unattributed 3.00 s"));
  EXPECT_THAT(html, HasSubstr("formal_load · run · succeeded"));
  EXPECT_THAT(SvgElement(html, "timeline"), HasSubstr("formal window"));
  EXPECT_THAT(SvgElement(html, "timeline"), HasSubstr("steady window"));
  EXPECT_THAT(SvgElement(html, "inflight"), HasSubstr("steady window"));
}

TEST(HtmlReportTest, ShowsDecisionAndThroughput) {
  std::string html = RenderHtmlReport(SyntheticReport());
  EXPECT_THAT(html, HasSubstr("verdict-inconclusive\">inconclusive"));
  EXPECT_THAT(html, HasSubstr("output_tokens_per_second_per_device (whole window)"));
  EXPECT_THAT(html, HasSubstr("149.1070 vs 147.9064 of baseline exp-6"));
  EXPECT_THAT(html, HasSubstr("+0.81%"));
  EXPECT_THAT(html, HasSubstr("±0.61% (runs: 2 vs 2)"));
  EXPECT_THAT(html, HasSubstr("id=\"repeats\""));
  EXPECT_THAT(html, HasSubstr("<td>149.7034</td>"));  // Run 2 of the experiment.
  EXPECT_THAT(html, HasSubstr("steady window</th>"));
  EXPECT_THAT(html, HasSubstr("<td>150.5981</td>"));  // Steady per device.
  EXPECT_THAT(html, HasSubstr("3f2a9c01d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f"));
}

TEST(HtmlReportTest, ShowsLaunchCommandsAndReusedSides) {
  std::string html = RenderHtmlReport(SyntheticReport());
  EXPECT_THAT(html, HasSubstr("<pre class=\"command\">servelab-sim\n--port\n8101"));
  EXPECT_THAT(html, HasSubstr("<h3>prefill</h3><p class=\"muted\">reused: launched by an "
                              "earlier experiment (the hot deployment held exp-6)"));
  EXPECT_THAT(html, HasSubstr("<h3>router</h3><p class=\"muted\">reused"));
}

TEST(HtmlReportTest, NamesTheExternalTool) {
  ReportInput input = SyntheticReport();
  input.experiment.mutable_external()->set_tool("vllm-bench-serve");
  input.experiment.mutable_external()->set_tool_version("0.6.3");
  input.experiment.mutable_external()->set_file_name("result.json");
  input.experiment.clear_stages();
  std::string html = RenderHtmlReport(input);
  EXPECT_THAT(html, HasSubstr("imported from vllm-bench-serve 0.6.3, file result.json"));
  EXPECT_THAT(html, HasSubstr("not launched: the records were imported from vllm-bench-serve"));
  EXPECT_THAT(html, HasSubstr("no stage has started"));
}

TEST(HtmlReportTest, RendersWithoutRecords) {
  ReportInput input = SyntheticReport({.requests_per_run = 0, .with_baseline = false});
  std::string html = RenderHtmlReport(input);
  EXPECT_THAT(html, HasSubstr("id=\"no-records\""));
  EXPECT_THAT(html, HasSubstr("no records"));
  EXPECT_THAT(html, HasSubstr("no completed request"));
  EXPECT_THAT(html, HasSubstr("no request was sent"));
  EXPECT_THAT(html, HasSubstr("Windows not shaded"));
  EXPECT_THAT(html, HasSubstr("No decision: there is no baseline"));
  for (const char* id : kSvgIds) EXPECT_FALSE(SvgElement(html, id).empty()) << id;
  EXPECT_THAT(html, HasSubstr("</html>"));
}

TEST(HtmlReportTest, EmptyExperimentRenders) {
  ReportInput input;
  input.generated_at = absl::UnixEpoch();
  std::string html = RenderHtmlReport(input);
  EXPECT_THAT(html, HasSubstr("no stage has started"));
  EXPECT_THAT(html, HasSubstr("</html>"));
}

}  // namespace
}  // namespace servelab::client::report
