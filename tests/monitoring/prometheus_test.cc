// A real Prometheus scrapes servelabd and the sims it launches while an
// experiment runs; what its HTTP API answers must agree with the
// experiment's own status from the daemon, and every query of the Grafana
// dashboard must run on it and return data.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/labels.h"
#include "google/protobuf/util/time_util.h"
#include "servelab/v1/experiment.pb.h"
#include "tests/monitoring/dashboard.h"
#include "tests/monitoring/prometheus_server.h"
#include "tests/sim/sim_harness.h"
#include "tests/testing/certificate.h"
#include "tests/testing/ports.h"
#include "tests/workflow/daemon_fixture.h"

namespace servelab {
namespace {

using google::protobuf::util::TimeUtil;
using ::servelab::sim::testing::SimProcess;
using testing::ClosedLoopbackPort;
using ::testing::DoubleNear;
using ::testing::IsEmpty;
using testing::MakeCertificate;
using ::testing::Not;
using testing::OnlyValue;
using testing::PrometheusServer;
using testing::PromSample;
using testing::SourcePath;

absl::Time ToTime(const google::protobuf::Timestamp& t) {
  return absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(t));
}

double Seconds(const google::protobuf::Duration& d) {
  return static_cast<double>(TimeUtil::DurationToNanoseconds(d)) / 1e9;
}

double StageSeconds(const v1::Stage& s) {
  return absl::ToDoubleSeconds(ToTime(s.ended_at()) - ToTime(s.started_at()));
}

// True once the vector has exactly one element with that value.
auto Is(double value) {
  return [value](const std::vector<PromSample>& v) { return OnlyValue(v) == value; };
}

// n loopback ports, distinct, that nothing listens on now.
std::vector<int> FreePorts(int n) {
  std::vector<int> ports;
  while (static_cast<int>(ports.size()) < n) {
    const int port = ClosedLoopbackPort();
    if (std::find(ports.begin(), ports.end(), port) == ports.end()) ports.push_back(port);
  }
  return ports;
}

class PrometheusTest : public DaemonFixture {};

// Off the host, servelabd serves /metrics over HTTPS only; Prometheus
// scrapes it with the certificate's CA, as a remote one would (the test
// itself stays on 127.0.0.1: 0.0.0.0 is not loopback, so TLS is required).
TEST_F(PrometheusTest, ScrapesTheDaemonOverHttpsWhenItListensOffTheHost) {
  const std::string cert = dir_.File("cert.pem"), key = dir_.File("key.pem");
  ASSERT_NO_FATAL_FAILURE(MakeCertificate(cert, key));
  StartDaemon({"--paused", "--metrics-listen", "0.0.0.0:0", "--allow-remote", "--tls-cert", cert,
               "--tls-key", key});
  auto started = PrometheusServer::Start(
      {{.job = "servelabd", .port = metrics_port_, .ca_file = cert}}, dir_.File("prometheus"));
  ASSERT_TRUE(started.ok()) << started.status();
  const PrometheusServer& prometheus = **started;
  auto up = prometheus.QueryUntil("up{job=\"servelabd\"}", Is(1));
  ASSERT_TRUE(up.ok() && OnlyValue(*up) == 1) << up.status() << prometheus.Log();
  Submit({"-f", SourcePath("deploy/examples/pd-quick.yaml")});
  auto queued = prometheus.QueryUntil("servelab_experiments{state=\"queued\"}", Is(1));
  ASSERT_TRUE(queued.ok() && OnlyValue(*queued) == 1) << queued.status() << prometheus.Log();
  auto type = prometheus.MetricType("servelab_stage_duration_seconds");
  ASSERT_TRUE(type.ok()) << type.status();
  EXPECT_EQ(*type, "histogram");
}

TEST_F(PrometheusTest, ScrapesTheDaemonAndSimsWhileAnExperimentRuns) {
  StartDaemon({"--sim-time-scale", "0.05"});
  // The sims' ports are fixed in the spec, so that Prometheus has them as
  // targets before the launch and scrapes them from their first second.
  const std::vector<int> ports = FreePorts(3);
  const int prefill_port = ports[0], decode_port = ports[1], router_port = ports[2];
  // An SGLang-profile sim beside them, so that the dashboard's SGLang
  // queries have a series to find too.
  SimProcess sglang(
      {"--role", "decode", "--compat", "sglang", "--enable-metrics", "--time-scale", "0.01"});
  ASSERT_TRUE(sglang.WaitHealthy());
  auto started = PrometheusServer::Start(
      {
          {.job = "servelabd", .port = metrics_port_},
          {.job = "servelab-sim", .port = prefill_port, .labels = {{"side", "prefill"}}},
          {.job = "servelab-sim", .port = decode_port, .labels = {{"side", "decode"}}},
          {.job = "servelab-sim", .port = router_port, .labels = {{"side", "router"}}},
          {.job = "sglang", .port = sglang.port(), .labels = {{"side", "decode"}}},
      },
      dir_.File("prometheus"));
  ASSERT_TRUE(started.ok()) << started.status();
  const PrometheusServer& prometheus = **started;
  // The daemon is scraped before anything is submitted, so Prometheus sees
  // the experiment from its start.
  auto up = prometheus.QueryUntil("up{job=\"servelabd\"}", Is(1));
  ASSERT_TRUE(up.ok() && OnlyValue(*up) == 1) << up.status() << prometheus.Log();

  // 40 formal requests at a constant 8/s: the load lasts about 5 s on any
  // machine, so several 1 s scrapes fall inside it.
  v1::Experiment e = WaitFinal(Submit(
      {"-f", SourcePath("deploy/examples/pd-quick.yaml"), "--set",
       absl::StrCat("deployment.prefill.port=", prefill_port), "--set",
       absl::StrCat("deployment.decode.port=", decode_port), "--set",
       absl::StrCat("deployment.router.port=", router_port), "--set", "workload.num_requests=40",
       "--set", "workload.request_rate=8", "--set", "workload.arrival=constant"}));
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  ASSERT_EQ(Counter(e, v1::STAGE_LAUNCH_DECODE, "port"), decode_port);

  // A scrape after the end: the store says succeeded.
  auto succeeded = prometheus.QueryUntil("servelab_experiments{state=\"succeeded\"}", Is(1));
  ASSERT_TRUE(succeeded.ok() && OnlyValue(*succeeded) == 1) << succeeded.status();

  // Time to first formal request: one observation, the status's delay.
  ASSERT_TRUE(e.progress().has_first_formal_request_delay());
  const double delay = Seconds(e.progress().first_formal_request_delay());
  auto first_count = prometheus.Query("servelab_time_to_first_formal_request_seconds_count");
  ASSERT_TRUE(first_count.ok()) << first_count.status();
  EXPECT_EQ(OnlyValue(*first_count), 1);
  auto first_sum = prometheus.Query("servelab_time_to_first_formal_request_seconds_sum");
  ASSERT_TRUE(first_sum.ok()) << first_sum.status();
  EXPECT_THAT(OnlyValue(*first_sum), DoubleNear(delay, 1e-6));
  // The histogram agrees too: the delay lies in the bucket where the count
  // first reaches 1.
  auto buckets = prometheus.Query("servelab_time_to_first_formal_request_seconds_bucket");
  ASSERT_TRUE(buckets.ok()) << buckets.status();
  ASSERT_THAT(*buckets, Not(IsEmpty()));
  for (const PromSample& b : *buckets) {
    const double le = std::strtod(b.labels.at("le").c_str(), nullptr);
    EXPECT_EQ(b.value, delay <= le ? 1 : 0) << "le=" << b.labels.at("le") << " delay " << delay;
  }

  // Stage durations: every stage that ran has one observation, its
  // ended_at - started_at, and no other stage has any. (Every stage's series
  // exists from the daemon's start at 0; freeze happens inside
  // SubmitExperiment, before the stage runner sees the experiment, and is
  // not observed.)
  auto stage_sums = prometheus.Query("servelab_stage_duration_seconds_sum{action=\"run\"}");
  auto stage_counts = prometheus.Query("servelab_stage_duration_seconds_count{action=\"run\"}");
  ASSERT_TRUE(stage_sums.ok() && stage_counts.ok()) << stage_sums.status() << stage_counts.status();
  std::map<std::string, double> sum_by_stage, count_by_stage;
  for (const PromSample& s : *stage_counts) count_by_stage[s.labels.at("stage")] = s.value;
  for (const PromSample& s : *stage_sums) {
    if (count_by_stage[s.labels.at("stage")] > 0) sum_by_stage[s.labels.at("stage")] = s.value;
  }
  for (const v1::Stage& s : e.stages()) {
    if (s.status() != v1::STAGE_STATUS_SUCCEEDED || s.name() == v1::STAGE_FREEZE) continue;
    const std::string label = StageLabel(s.name());
    ASSERT_EQ(sum_by_stage.count(label), 1u) << label << " has no series";
    EXPECT_EQ(count_by_stage[label], 1) << label;
    EXPECT_THAT(sum_by_stage[label], DoubleNear(StageSeconds(s), 1e-6)) << label;
    sum_by_stage.erase(label);
  }
  EXPECT_THAT(sum_by_stage, IsEmpty()) << "observations of stages the status does not show as run";
  const v1::Stage& formal = StageOf(e, v1::STAGE_FORMAL_LOAD);
  auto formal_sum =
      prometheus.Query("servelab_stage_duration_seconds_sum{stage=\"formal_load\",action=\"run\"}");
  ASSERT_TRUE(formal_sum.ok()) << formal_sum.status();
  EXPECT_THAT(OnlyValue(*formal_sum), DoubleNear(StageSeconds(formal), 1e-6));

  // Formal requests by outcome, as the status counts them.
  for (const auto& [outcome, expected] : std::vector<std::pair<std::string, int64_t>>{
           {"sent", e.progress().formal_requests_sent()},
           {"completed", e.progress().formal_requests_completed()},
           {"failed", e.progress().formal_requests_failed()}}) {
    auto n =
        prometheus.Query(absl::StrCat("servelab_formal_requests_total{outcome=\"", outcome, "\"}"));
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(OnlyValue(*n), static_cast<double>(expected)) << outcome;
  }
  EXPECT_EQ(e.progress().formal_requests_sent(), 40);

  // Scraped while it ran: the scrapes inside the formal load (seen from its
  // end, a window a second shorter than the load) saw the lane busy and
  // the experiment running, and the sims answered them.
  const int window = static_cast<int>(StageSeconds(formal)) - 1;
  ASSERT_GE(window, 3) << "the formal load was expected to last about 5 s";
  const absl::Time formal_end = ToTime(formal.ended_at());
  auto during = [&](const std::string& promql) {
    absl::StatusOr<std::vector<PromSample>> r =
        prometheus.Query(absl::StrCat(promql, "[", window, "s])"), formal_end);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? OnlyValue(*r) : NAN;
  };
  EXPECT_GE(during("count_over_time(servelab_lane_busy"), 2);
  EXPECT_EQ(during("min_over_time(servelab_lane_busy"), 1);
  EXPECT_EQ(during("min_over_time(servelab_experiments{state=\"running\"}"), 1);
  for (const char* side : {"prefill", "decode", "router"}) {
    SCOPED_TRACE(side);
    EXPECT_GE(
        during(absl::StrCat("count_over_time(vllm:num_requests_running{side=\"", side, "\"}")), 2);
    EXPECT_EQ(during(absl::StrCat("min_over_time(up{job=\"servelab-sim\",side=\"", side, "\"}")),
              1);
  }
  // What Prometheus holds for the decode sim's success counter is what the
  // sim itself serves, once the next scrape lands.
  const double decode_successes = MetricSum(decode_port, "vllm:request_success_total");
  EXPECT_GE(decode_successes, 40);
  auto successes = prometheus.QueryUntil("sum(vllm:request_success_total{side=\"decode\"})",
                                         Is(decode_successes));
  ASSERT_TRUE(successes.ok()) << successes.status();
  EXPECT_EQ(OnlyValue(*successes), decode_successes);

  // The # TYPE lines reached Prometheus's metadata (a counter announced
  // under another name than its samples' would read "unknown").
  for (const auto& [metric, type] : std::vector<std::pair<std::string, std::string>>{
           {"servelab_formal_requests_total", "counter"},
           {"servelab_stage_duration_seconds", "histogram"},
           {"servelab_lane_busy", "gauge"},
           {"vllm:request_success_total", "counter"},
           {"vllm:prompt_tokens_total", "counter"},
           {"vllm:time_to_first_token_seconds", "histogram"},
           {"sglang:num_requests_total", "counter"}}) {
    absl::StatusOr<std::string> got = prometheus.MetricType(metric);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, type) << metric;
  }

  // A concurrency delta, so that stages are reused as well as run; then every
  // query of the dashboard parses and returns data on this Prometheus.
  v1::Experiment delta = WaitFinal(Submit(
      {"--base", e.id(), "--set", "workload.concurrency=8", "--set", "workload.request_rate=0"}));
  ASSERT_EQ(delta.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << delta.blocker();
  auto reused = prometheus.QueryUntil("servelab_stage_reuse_total{stage=\"launch_decode\"}", Is(1));
  ASSERT_TRUE(reused.ok() && OnlyValue(*reused) == 1) << reused.status();
  auto queries = testing::LoadDashboardQueries(SourcePath("deploy/grafana/servelab.json"));
  ASSERT_TRUE(queries.ok()) << queries.status();
  ASSERT_THAT(*queries, Not(IsEmpty()));
  for (const testing::DashboardQuery& q : *queries) {
    const std::string promql = testing::ExpandGrafanaIntervals(q.expr);
    auto result = prometheus.Query(promql);
    ASSERT_TRUE(result.ok()) << q.panel << " " << q.ref_id << ": " << result.status();
    EXPECT_THAT(*result, Not(IsEmpty())) << q.panel << " " << q.ref_id << ": " << promql;
  }
}

}  // namespace
}  // namespace servelab
