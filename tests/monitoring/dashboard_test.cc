// deploy/grafana/servelab.json reads only series that servelabd and
// servelab-sim really export: every metric name in every PromQL expression
// of the dashboard is looked up on live /metrics after an experiment.
#include "tests/monitoring/dashboard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "servelab/v1/experiment.pb.h"
#include "tests/sim/sim_harness.h"
#include "tests/workflow/daemon_fixture.h"

namespace servelab {
namespace {

using ::servelab::sim::testing::Get;
using ::servelab::sim::testing::SimProcess;
using ::testing::Contains;
using testing::DashboardQuery;
using ::testing::ElementsAre;
using testing::ExpandGrafanaIntervals;
using testing::ExposedSeriesNames;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::LoadDashboardQueries;
using testing::MetricNamesInPromql;
using ::testing::Not;
using testing::SourcePath;

const std::string kDashboard = SourcePath("deploy/grafana/servelab.json");

TEST(PromqlNamesTest, FindsMetricsNotFunctionsLabelsOrVariables) {
  EXPECT_THAT(MetricNamesInPromql("sum by (stage) (rate(servelab_stage_duration_seconds_sum"
                                  "{action=\"run\"}[$__rate_interval]))"),
              ElementsAre("servelab_stage_duration_seconds_sum"));
  EXPECT_THAT(MetricNamesInPromql("histogram_quantile(0.9, sum(rate("
                                  "vllm:time_to_first_token_seconds_bucket[5m])) by (le))"),
              ElementsAre("vllm:time_to_first_token_seconds_bucket"));
  EXPECT_THAT(MetricNamesInPromql("a / on (instance) group_left (side) b offset 5m or vector(0)"),
              ElementsAre("a", "b"));
  EXPECT_THAT(MetricNamesInPromql("x{path=~\"/a{b}[c]\", le='+Inf'} > bool 1e3 unless x"),
              ElementsAre("x"));
  EXPECT_THAT(MetricNamesInPromql("max without (le) (y[5m:1m]) * ${factor} + $scale"),
              ElementsAre("y"));
  EXPECT_THAT(MetricNamesInPromql("count(up == 1) + sum (sglang:num_running_reqs) + Inf"),
              ElementsAre("up", "sglang:num_running_reqs"));
}

TEST(PromqlNamesTest, ExposedSeriesNamesAreSampleNames) {
  EXPECT_THAT(ExposedSeriesNames("# HELP h Help.\n# TYPE h histogram\n"
                                 "h_bucket{le=\"+Inf\"} 1\nh_sum 0.5\nh_count 1\n"
                                 "vllm:num_requests_running{model_name=\"m\"} 0\n"),
              ElementsAre("h_bucket", "h_count", "h_sum", "vllm:num_requests_running"));
}

TEST(DashboardTest, EveryPanelHasAQueryForWhatTheDashboardPromises) {
  auto queries = LoadDashboardQueries(kDashboard);
  ASSERT_TRUE(queries.ok()) << queries.status();
  std::set<std::string> names;
  for (const DashboardQuery& q : *queries) {
    EXPECT_THAT(q.panel, Not(IsEmpty()));
    EXPECT_THAT(q.ref_id, Not(IsEmpty())) << q.panel;
    // A name given only as {__name__=...} would escape the check below.
    EXPECT_THAT(q.expr, Not(HasSubstr("__name__"))) << q.panel;
    EXPECT_THAT(ExpandGrafanaIntervals(q.expr), Not(HasSubstr("$"))) << q.panel;
    for (const std::string& name : MetricNamesInPromql(q.expr)) names.insert(name);
  }
  for (const char* promised : {
           "servelab_lane_busy",                                    // lane busy
           "servelab_experiments",                                  // queue
           "servelab_queue_wait_seconds_sum",                       // queue
           "servelab_stage_duration_seconds_sum",                   // stage durations
           "servelab_time_to_first_formal_request_seconds_sum",     // time to first formal request
           "servelab_formal_requests_total",                        // by outcome
           "vllm:num_requests_running", "sglang:num_running_reqs",  // sims: running
           "vllm:num_requests_waiting", "sglang:num_queue_reqs",    // sims: waiting
           "vllm:kv_cache_usage_perc", "sglang:token_usage",        // sims: KV usage
       }) {
    EXPECT_THAT(names, Contains(promised));
  }
}

class DashboardLiveTest : public DaemonFixture {};

TEST_F(DashboardLiveTest, EveryMetricTheDashboardReadsIsExported) {
  auto queries = LoadDashboardQueries(kDashboard);
  ASSERT_TRUE(queries.ok()) << queries.status();

  // servelabd after a base experiment and a concurrency delta (so stages
  // were reused as well as run) and the vLLM-named sims it launched; then
  // SGLang-profile sims for the SGLang names.
  StartDaemon({"--sim-time-scale", "0.05"});
  v1::Experiment base = WaitFinal(Submit(
      {"-f", SourcePath("deploy/examples/pd-quick.yaml"), "--set", "workload.num_requests=24"}));
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  v1::Experiment e = WaitFinal(Submit({"--base", base.id(), "--set", "workload.concurrency=8"}));
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  ASSERT_EQ(StageOf(e, v1::STAGE_LAUNCH_DECODE).status(), v1::STAGE_STATUS_REUSED);
  std::set<std::string> exported;
  auto add = [&](const std::string& where, const std::string& exposition) {
    ASSERT_THAT(exposition, Not(IsEmpty())) << where;
    for (const std::string& name : ExposedSeriesNames(exposition)) exported.insert(name);
  };
  add("servelabd", HttpBody(metrics_port_, "/metrics"));
  for (v1::StageName launch :
       {v1::STAGE_LAUNCH_PREFILL, v1::STAGE_LAUNCH_DECODE, v1::STAGE_LAUNCH_ROUTER}) {
    add(v1::StageName_Name(launch), HttpBody(Counter(base, launch, "port"), "/metrics"));
  }
  for (const char* role : {"prefill", "decode"}) {
    SimProcess sglang(
        {"--role", role, "--compat", "sglang", "--enable-metrics", "--time-scale", "0.01"});
    ASSERT_TRUE(sglang.WaitHealthy()) << role;
    add(std::string("sglang ") + role, Get(sglang.port(), "/metrics").body);
  }

  int checked = 0;
  for (const DashboardQuery& q : *queries) {
    const std::vector<std::string> names = MetricNamesInPromql(q.expr);
    EXPECT_THAT(names, Not(IsEmpty())) << q.panel << " " << q.ref_id << ": " << q.expr;
    for (const std::string& name : names) {
      EXPECT_EQ(exported.count(name), 1u) << "panel \"" << q.panel << "\" " << q.ref_id << " reads "
                                          << name << ", which no live /metrics exports: " << q.expr;
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace servelab
