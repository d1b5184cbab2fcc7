// Every /metrics servelab serves passes Prometheus's own linter, `promtool
// check metrics`: servelabd's before and after an experiment, the sims that
// experiment launched, and servelab-sim in every --compat profile and role.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "servelab/v1/experiment.pb.h"
#include "tests/monitoring/promtool.h"
#include "tests/sim/sim_harness.h"
#include "tests/workflow/daemon_fixture.h"

namespace servelab {
namespace {

using ::servelab::sim::testing::Get;
using ::servelab::sim::testing::HttpResponse;
using ::servelab::sim::testing::Post;
using ::servelab::sim::testing::SimProcess;
using testing::CheckMetrics;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ProblemsBesidesEngineColons;
using testing::PromtoolResult;
using testing::RequirePromtool;
using testing::SourcePath;

// The linter's verdict on a sim's /metrics: it parses (exit 1 is a parse
// error), and nothing is flagged besides the engines' own "vllm:" /
// "sglang:" names.
void ExpectSimMetricsPass(const std::string& what, const std::string& exposition) {
  ASSERT_FALSE(exposition.empty()) << what << ": no /metrics";
  PromtoolResult r = CheckMetrics(exposition);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << what << ": exit " << r.exit_code << "\n"
                                                    << r.output << exposition;
  EXPECT_THAT(ProblemsBesidesEngineColons(r), IsEmpty()) << what << "\n" << exposition;
}

class MetricsFormatTest : public DaemonFixture {};

TEST_F(MetricsFormatTest, DaemonAndTheSimsItLaunchedPassPromtool) {
  ASSERT_TRUE(RequirePromtool());
  StartDaemon({"--sim-time-scale", "0.05"});
  // A fresh daemon: nothing observed yet.
  PromtoolResult fresh = CheckMetrics(HttpBody(metrics_port_, "/metrics"));
  EXPECT_EQ(fresh.exit_code, 0) << fresh.output;
  EXPECT_THAT(fresh.problems, IsEmpty());

  // After an experiment and a refused RPC, every family has samples:
  // labelled histograms, outcome counters, more than one status code.
  v1::Experiment e = WaitFinal(Submit(
      {"-f", SourcePath("deploy/examples/pd-quick.yaml"), "--set", "workload.num_requests=24"}));
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  EXPECT_EQ(Cli({"status", "exp-that-does-not-exist"}).exit_code, 4);
  const std::string scrape = HttpBody(metrics_port_, "/metrics");
  ASSERT_THAT(scrape, HasSubstr("servelab_stage_duration_seconds_bucket{"));
  ASSERT_THAT(scrape, HasSubstr("servelab_formal_requests_total{"));
  ASSERT_THAT(scrape, HasSubstr("code=\"NOT_FOUND\""));
  PromtoolResult after = CheckMetrics(scrape);
  EXPECT_EQ(after.exit_code, 0) << after.output;
  EXPECT_THAT(after.problems, IsEmpty()) << scrape;

  for (v1::StageName launch :
       {v1::STAGE_LAUNCH_PREFILL, v1::STAGE_LAUNCH_DECODE, v1::STAGE_LAUNCH_ROUTER}) {
    const int port = Counter(e, launch, "port");
    ASSERT_GT(port, 0) << v1::StageName_Name(launch);
    ExpectSimMetricsPass(v1::StageName_Name(launch), HttpBody(port, "/metrics"));
  }
}

// Flags of a sim in `compat`: SGLang serves /metrics only when asked.
std::vector<std::string> SimFlags(const std::string& compat, std::vector<std::string> more) {
  std::vector<std::string> flags = {"--time-scale", "0.01", "--compat", compat};
  if (compat == "sglang") flags.push_back("--enable-metrics");
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

TEST(SimMetricsFormatTest, EveryProfileAndRolePassesPromtool) {
  ASSERT_TRUE(RequirePromtool());
  // A load tag with every byte the text format escapes and one (a tab) that
  // JSON escapes but the text format must not.
  const std::string tag = "exp-1/formal/1 \"quoted\" back\\slash\ttab";
  const std::string body =
      R"({"prompt":"a b c d e f","max_tokens":3,"min_tokens":3,"ignore_eos":true})";
  for (const std::string compat : {"sim", "vllm", "vllm-ascend", "sglang"}) {
    SCOPED_TRACE(compat);
    SimProcess unified(SimFlags(compat, {"--role", "unified"}));
    SimProcess prefill(SimFlags(compat, {"--role", "prefill"}));
    SimProcess decode(SimFlags(compat, {"--role", "decode"}));
    ASSERT_TRUE(unified.WaitHealthy() && prefill.WaitHealthy() && decode.WaitHealthy());
    SimProcess router(SimFlags(compat, {"--role", "router", "--prefill-url", prefill.url(),
                                        "--decode-url", decode.url()}));
    // vLLM's and vllm-ascend's proxies have /healthcheck and no /metrics.
    const bool proxy = compat == "vllm" || compat == "vllm-ascend";
    if (proxy) {
      ASSERT_TRUE(servelab::testing::WaitFor(
          [&] { return Get(router.port(), "/healthcheck").status == 200; }, absl::Seconds(10)));
    } else {
      ASSERT_TRUE(router.WaitHealthy());
    }
    // Requests so that histograms, counters and load gauges have samples.
    EXPECT_EQ(Post(unified.port(), "/v1/completions", body, {{"x-servelab-load", tag}}).status,
              200);
    HttpResponse routed = Post(router.port(), "/v1/completions", body, {{"x-servelab-load", tag}});
    EXPECT_EQ(routed.status, 200) << routed.body;
    const std::string unified_metrics = Get(unified.port(), "/metrics").body;
    EXPECT_THAT(unified_metrics, HasSubstr("servelab_sim_load_in_flight{load="));
    ExpectSimMetricsPass("unified", unified_metrics);
    ExpectSimMetricsPass("prefill", Get(prefill.port(), "/metrics").body);
    ExpectSimMetricsPass("decode", Get(decode.port(), "/metrics").body);
    if (proxy) {
      EXPECT_EQ(Get(router.port(), "/metrics").status, 404);
    } else {
      ExpectSimMetricsPass("router", Get(router.port(), "/metrics").body);
    }
  }
}

}  // namespace
}  // namespace servelab
