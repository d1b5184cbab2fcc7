// The experiment engine end to end (issue "Experiment engine", acceptance
// 1-6 and 8): servelabd runs experiments on servelab-sim processes it
// launches itself; the test drives it with the servelab CLI and checks the
// sims' own counters and overlap witness.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "google/protobuf/util/time_util.h"
#include "servelab/v1/experiment.pb.h"
#include "tests/workflow/daemon_fixture.h"
#include "yaml-cpp/yaml.h"

namespace servelab {
namespace {

using google::protobuf::util::TimeUtil;
using ::testing::HasSubstr;
using testing::RunResult;
using testing::SourcePath;

class WorkflowTest : public DaemonFixture {
 protected:
  void StartDaemon() { DaemonFixture::StartDaemon({"--sim-time-scale", "0.05"}); }
  static std::string SimGet(int port, const std::string& path) { return HttpBody(port, path); }

  static const std::string kSpec;
};

const std::string WorkflowTest::kSpec = SourcePath("deploy/examples/pd-quick.yaml");

TEST_F(WorkflowTest, BaseThenConcurrencyDeltaThenDecodeDelta) {
  StartDaemon();
  // 1. The base experiment runs every stage.
  v1::Experiment base = WaitFinal(Submit({"-f", kSpec}));
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  for (const v1::Stage& s : base.stages()) {
    EXPECT_EQ(s.status(), v1::STAGE_STATUS_SUCCEEDED) << v1::StageName_Name(s.name()) << s.error();
    EXPECT_TRUE(s.has_started_at() && s.has_ended_at()) << v1::StageName_Name(s.name());
  }
  EXPECT_EQ(base.result().whole().name(), "whole");
  EXPECT_EQ(base.result().steady().name(), "steady");
  EXPECT_EQ(base.result().whole().requests_completed(), 96);
  EXPECT_EQ(base.progress().formal_requests_sent(), 96);
  EXPECT_GT(StageOf(base, v1::STAGE_CACHE_SEED).counters().at("summed_request_latency_seconds"), 0);
  // Measured by the real runner: 96 first tokens, read well within a second.
  const double read_lag =
      StageOf(base, v1::STAGE_FORMAL_LOAD).counters().at("client_read_lag_p99_seconds");
  EXPECT_GE(read_lag, 0);
  EXPECT_LT(read_lag, 1.0);
  const int prefill_pid = Counter(base, v1::STAGE_LAUNCH_PREFILL, "pid");
  const int decode_pid = Counter(base, v1::STAGE_LAUNCH_DECODE, "pid");
  const int decode_port = Counter(base, v1::STAGE_LAUNCH_DECODE, "port");
  const int prefill_port = Counter(base, v1::STAGE_LAUNCH_PREFILL, "port");
  ASSERT_TRUE(Alive(prefill_pid) && Alive(decode_pid));

  // 2. A pure concurrency delta reuses the launches, warmup and route.
  const double prefill_requests = MetricSum(prefill_port, "vllm:request_success_total");
  RunResult plan = Cli({"plan", "--base", base.id(), "--set", "workload.concurrency=8"});
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("launch_decode  reuse"));
  v1::Experiment c8 = WaitFinal(Submit({"--base", base.id(), "--set", "workload.concurrency=8"}));
  ASSERT_EQ(c8.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << c8.blocker();
  for (v1::StageName s : {v1::STAGE_LAUNCH_PREFILL, v1::STAGE_LAUNCH_DECODE,
                          v1::STAGE_LAUNCH_ROUTER, v1::STAGE_WARMUP, v1::STAGE_ROUTE_VERIFY}) {
    EXPECT_EQ(StageOf(c8, s).status(), v1::STAGE_STATUS_REUSED) << v1::StageName_Name(s);
  }
  EXPECT_TRUE(Alive(prefill_pid) && Alive(decode_pid));
  EXPECT_TRUE(c8.progress().has_first_formal_request_delay());
  // The sim saw the seed and formal requests, and no warmup of c8's.
  YAML::Node loads = YAML::Load(SimGet(decode_port, "/debug/loads"))["loads"];
  EXPECT_TRUE(loads[c8.id() + "/formal/1"].IsDefined());
  EXPECT_FALSE(loads[c8.id() + "/warmup/1"].IsDefined());
  EXPECT_TRUE(loads[base.id() + "/warmup/1"].IsDefined());
  // The base's drain left the caches reset; c8 only checked they still were.
  EXPECT_EQ(Counter(c8, v1::STAGE_CACHE_RESET, "reset_ahead"), 1);
  EXPECT_EQ(Counter(c8, v1::STAGE_CACHE_RESET, "prefill_cache_check_requests"), 0);
  // Formal + one seed request per prefix group + the check requests of the
  // reset ahead at c8's own drain (one to cache the check prompt, one to see
  // it no longer hits).
  EXPECT_EQ(Counter(c8, v1::STAGE_DRAIN_CONFIRM, "prefill_cache_check_requests"), 2);
  EXPECT_EQ(MetricSum(prefill_port, "vllm:request_success_total") - prefill_requests, 96 + 4 + 2);

  // 3. A decode-side delta relaunches decode only.
  v1::Experiment layout =
      WaitFinal(Submit({"--base", c8.id(), "--set",
                        "deployment.decode.expert_layout=" +
                            SourcePath("deploy/examples/layouts/decode-layout-b.json")}));
  ASSERT_EQ(layout.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << layout.blocker();
  EXPECT_EQ(StageOf(layout, v1::STAGE_LAUNCH_PREFILL).status(), v1::STAGE_STATUS_REUSED);
  EXPECT_EQ(StageOf(layout, v1::STAGE_LAUNCH_DECODE).status(), v1::STAGE_STATUS_SUCCEEDED);
  EXPECT_TRUE(Alive(prefill_pid));
  EXPECT_NE(Counter(layout, v1::STAGE_LAUNCH_DECODE, "pid"), decode_pid);
  EXPECT_FALSE(Alive(decode_pid));

  // What the runner reported to /metrics.
  const std::string scrape = SimGet(metrics_port_, "/metrics");
  EXPECT_THAT(scrape, HasSubstr("servelab_instance_launches_total{side=\"decode\"} 2"));
  EXPECT_THAT(scrape, HasSubstr("servelab_instance_launches_total{side=\"prefill\"} 1"));
  EXPECT_THAT(scrape, HasSubstr("servelab_stage_reuse_total{stage=\"warmup\"} 1"));
  EXPECT_THAT(scrape, HasSubstr("servelab_time_to_first_formal_request_seconds_count 3"));
  EXPECT_THAT(scrape, HasSubstr("servelab_formal_requests_total{outcome=\"completed\"} 288"));
  EXPECT_THAT(
      scrape,
      HasSubstr("servelab_stage_duration_seconds_count{action=\"run\",stage=\"formal_load\"} 3"));
  EXPECT_THAT(scrape, HasSubstr("servelab_lane_busy 0"));

  RunResult summary = Cli({"summary"});
  EXPECT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_THAT(summary.out, HasSubstr("8k-cache50"));
}

TEST_F(WorkflowTest, AnalysisFailureResumesWithoutNewRequests) {
  StartDaemon();
  v1::Experiment e = WaitFinal(
      Submit({"-f", kSpec, "--set", "analysis.decision.metric=output_tokens_per_second_per_crad"}));
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::ANALYSIS_FAILED);
  const int prefill_port = Counter(e, v1::STAGE_LAUNCH_PREFILL, "port");
  const int decode_port = Counter(e, v1::STAGE_LAUNCH_DECODE, "port");
  const double p0 = MetricSum(prefill_port, "vllm:request_success_total");
  const double d0 = MetricSum(decode_port, "vllm:request_success_total");

  // A resume delta outside NOTHING/ANALYSIS is refused.
  RunResult refused = Cli({"resume", e.id(), "--set", "workload.concurrency=3"});
  EXPECT_EQ(refused.exit_code, 3);
  EXPECT_THAT(refused.err, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(refused.err, HasSubstr("workload.concurrency"));

  RunResult resumed =
      Cli({"resume", e.id(), "--set", "analysis.decision.metric=output_tokens_per_second"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  e = WaitFinal(e.id());
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  EXPECT_EQ(MetricSum(prefill_port, "vllm:request_success_total"), p0);
  EXPECT_EQ(MetricSum(decode_port, "vllm:request_success_total"), d0);
}

TEST_F(WorkflowTest, KillDuringFormalLoadThenResume) {
  StartDaemon();
  const std::string id = Submit(
      {"-f", kSpec, "--set", "workload.num_requests=600", "--set", "workload.concurrency=4"});
  RunResult sent = Cli({"wait", id, "--until", "sent", "--timeout", "100s"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  // Kill once some of the first attempt's records are stored.
  ASSERT_TRUE(WaitForFormalRecords());
  v1::Experiment running = Status(id);
  const int prefill_pid = Counter(running, v1::STAGE_LAUNCH_PREFILL, "pid");
  const int router_pid = Counter(running, v1::STAGE_LAUNCH_ROUTER, "pid");
  KillDaemon();

  StartDaemon();
  v1::Experiment e = Status(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::LOAD_INTERRUPTED) << e.blocker();
  EXPECT_TRUE(Alive(prefill_pid) && Alive(router_pid));
  const int64_t first_attempt_sent = e.progress().formal_requests_sent();
  EXPECT_GT(first_attempt_sent, 0);

  ASSERT_EQ(Cli({"resume", id}).exit_code, 0);
  e = WaitFinal(id);
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  EXPECT_EQ(Counter(e, v1::STAGE_FORMAL_LOAD, "attempt"), 2);
  EXPECT_EQ(StageOf(e, v1::STAGE_LAUNCH_PREFILL).attempt(), 1);  // Not relaunched.
  EXPECT_EQ(Counter(e, v1::STAGE_LAUNCH_PREFILL, "pid"), prefill_pid);
  EXPECT_TRUE(Alive(prefill_pid));
  StopDaemon();
  // The first attempt's raw records are still stored beside the second's.
  RunResult rows = testing::Run({"/usr/bin/sqlite3", state_dir_ + "/servelab.db",
                                 "SELECT attempt, count(*) FROM requests WHERE phase = 4 "
                                 "GROUP BY attempt ORDER BY attempt"});
  ASSERT_EQ(rows.exit_code, 0) << rows.err;
  EXPECT_THAT(rows.out, HasSubstr("1|"));
  EXPECT_THAT(rows.out, HasSubstr("2|600"));
}

TEST_F(WorkflowTest, BackToBackFormalLoadsNeverOverlap) {
  StartDaemon();
  const std::string first = Submit({"-f", kSpec, "--set", "workload.num_requests=200"});
  const std::string second = Submit({"--base", first, "--set", "workload.concurrency=8"});
  v1::Experiment a = WaitFinal(first);
  v1::Experiment b = WaitFinal(second);
  ASSERT_EQ(a.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << a.blocker();
  ASSERT_EQ(b.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << b.blocker();
  const int decode_port = Counter(a, v1::STAGE_LAUNCH_DECODE, "port");
  YAML::Node loads = YAML::Load(SimGet(decode_port, "/debug/loads"))["loads"];
  YAML::Node la = loads[first + "/formal/1"];
  YAML::Node lb = loads[second + "/formal/1"];
  ASSERT_TRUE(la.IsDefined() && lb.IsDefined());
  EXPECT_LT(la["last_completion_unix"].as<double>(), lb["first_arrival_unix"].as<double>());
  // The second was prepared while the first's load ran.
  EXPECT_LT(TimeUtil::TimestampToNanoseconds(StageOf(b, v1::STAGE_PREFLIGHT).ended_at()),
            TimeUtil::TimestampToNanoseconds(StageOf(a, v1::STAGE_FORMAL_LOAD).ended_at()));
}

}  // namespace
}  // namespace servelab
