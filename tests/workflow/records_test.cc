// Raw records in and out, end to end on the real binaries: `servelab import`
// of another tool's result file, and `servelab report --html` rendered by a
// real headless Chromium (docs/design.md §11 "Imported runs", §12 "Report").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/chromium.h"
#include "tests/testing/subprocess.h"
#include "tests/workflow/daemon_fixture.h"

namespace servelab {
namespace {

using ::testing::HasSubstr;
using testing::RunResult;
using testing::SourcePath;

class RecordsTest : public DaemonFixture {
 protected:
  void StartDaemon() { DaemonFixture::StartDaemon({"--sim-time-scale", "0.05"}); }
  int ExperimentCount() {
    RunResult list = Cli({"-o", "json", "list"});
    EXPECT_EQ(list.exit_code, 0) << list.err;
    int count = 0;
    for (size_t at = list.out.find("\"id\""); at != std::string::npos;
         at = list.out.find("\"id\"", at + 1)) {
      ++count;
    }
    return count;
  }
  static std::string Testdata(const std::string& name) {
    return SourcePath("client/import/testdata/" + name);
  }

  const std::string kSpec = SourcePath("deploy/examples/pd-quick.yaml");
};

TEST_F(RecordsTest, ImportedVllmRunIsAnalyzedWithoutLaunchingAnything) {
  StartDaemon();
  RunResult imported =
      Cli({"-o", "json", "import", "--tool", "vllm", Testdata("vllm_detailed.json"), "--spec",
           kSpec, "--set", "workload.concurrency=2", "--set", "workload.num_requests=6"});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  v1::Experiment e = WaitFinal(Parse(imported).id());
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  EXPECT_EQ(e.external().tool(), "vllm-bench-serve");
  EXPECT_EQ(e.external().tool_version(), "0.16.0");
  EXPECT_EQ(e.external().file_name(), "vllm_detailed.json");
  EXPECT_EQ(e.result().whole().requests_completed(), 5);
  EXPECT_EQ(e.result().whole().requests_failed(), 1);
  EXPECT_GT(e.result().whole().ttft().p50(), 0);
  for (v1::StageName s : {v1::STAGE_LAUNCH_PREFILL, v1::STAGE_WARMUP, v1::STAGE_FORMAL_LOAD}) {
    EXPECT_EQ(StageOf(e, s).status(), v1::STAGE_STATUS_SKIPPED) << v1::StageName_Name(s);
  }
  EXPECT_EQ(e.progress().formal_requests_sent(), 0) << "servelab itself sent nothing";
  EXPECT_THAT(Cli({"summary"}).out, HasSubstr("none (the devices are free)"));
  EXPECT_THAT(Cli({"status", e.id()}).out, HasSubstr("measured by vllm-bench-serve 0.16.0"));
}

TEST_F(RecordsTest, RefusedImportsStoreNothing) {
  StartDaemon();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--tool", "vllm", Testdata("vllm_string_in_itls.json"), "--spec", kSpec}, "itls[3][1]"},
      {{"--tool", "vllm", Testdata("vllm_no_start_times.json"), "--spec", kSpec}, "start_times"},
      {{"--tool", "vllm", Testdata("vllm_truncated.json"), "--spec", kSpec}, "vllm_truncated"},
      {{"--tool", "vllm", Testdata("vllm_detailed.json"), "--spec", kSpec, "--set",
        "workload.repeats=-1"},
       "workload.repeats"},
      {{"--tool", "vllm", Testdata("vllm_detailed.json"), "--base", "exp-404"}, "exp-404"},
  };
  for (const auto& [args, field] : cases) {
    std::vector<std::string> argv = {"import"};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = Cli(argv);
    EXPECT_NE(r.exit_code, 0) << field;
    EXPECT_THAT(r.err, HasSubstr(field));
  }
  RunResult tool =
      Cli({"import", "--tool", "locust", Testdata("vllm_detailed.json"), "--spec", kSpec});
  EXPECT_EQ(tool.exit_code, 2) << tool.err;
  RunResult both = Cli({"import", "--tool", "vllm", Testdata("vllm_detailed.json")});
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_EQ(ExperimentCount(), 0);
  RunResult records = testing::Run(
      {"/usr/bin/sqlite3", state_dir_ + "/servelab.db", "SELECT count(*) FROM requests"});
  EXPECT_EQ(records.out, "0\n");
}

TEST_F(RecordsTest, HtmlReportRendersInHeadlessChromium) {
  StartDaemon();
  v1::Experiment base = WaitFinal(Submit({"-f", kSpec, "--set", "workload.num_requests=32"}));
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  v1::Experiment c8 = WaitFinal(Submit({"--base", base.id(), "--set", "workload.concurrency=8"}));
  ASSERT_EQ(c8.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << c8.blocker();
  const std::string html = dir_.File("report.html");
  RunResult r = Cli({"report", c8.id(), "--html", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("32 records, baseline " + base.id()));
  std::ifstream in(html);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_THAT(text, HasSubstr(c8.spec_sha256()));
  EXPECT_NE(text.find("reused: launched by an earlier experiment"), std::string::npos);
  EXPECT_EQ(text.find("http://"), std::string::npos);
  // The base launched every side: its report holds the exact commands.
  const std::string base_html = dir_.File("base.html");
  ASSERT_EQ(Cli({"report", base.id(), "--html", base_html}).exit_code, 0);
  std::ifstream base_in(base_html);
  const std::string base_text((std::istreambuf_iterator<char>(base_in)), {});
  EXPECT_NE(base_text.find("servelab-sim"), std::string::npos);

  RunResult missing = Cli({"report", "exp-99", "--html", dir_.File("none.html")});
  EXPECT_EQ(missing.exit_code, 4);
  EXPECT_FALSE(std::filesystem::exists(dir_.File("none.html")));

  if (testing::ChromiumPath().empty()) GTEST_SKIP() << "no /usr/bin/chromium to render with";
  absl::StatusOr<std::string> dom = testing::ChromiumDumpDom(html);
  ASSERT_TRUE(dom.ok()) << dom.status();
  for (const char* id : {"timeline", "cdf-ttft", "cdf-tpot", "cdf-itl", "cdf-e2e", "inflight"}) {
    EXPECT_THAT(*dom, HasSubstr(absl::StrCat("id=\"", id, "\""))) << id;
  }
  const std::string png = dir_.File("report.png");
  ASSERT_TRUE(testing::ChromiumScreenshot(html, png).ok());
  EXPECT_GT(std::filesystem::file_size(png), 20'000u);
}

}  // namespace
}  // namespace servelab
