// The deployment's lifecycle and repeated measurements, end to end on the
// real binaries: `servelab release` through the lane, and workload.repeats
// with its spread-aware decision (docs/design.md §6 "Release", §11 "Repeats").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "google/protobuf/util/json_util.h"
#include "servelab/v1/service.pb.h"
#include "tests/testing/subprocess.h"
#include "tests/workflow/daemon_fixture.h"

namespace servelab {
namespace {

using ::testing::HasSubstr;
using testing::RunResult;
using testing::SourcePath;

class LifecycleTest : public DaemonFixture {
 protected:
  void StartDaemon() { DaemonFixture::StartDaemon({"--sim-time-scale", "0.05"}); }

  v1::Summary SummaryJson() {
    RunResult r = Cli({"-o", "json", "summary"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    v1::Summary summary;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &summary).ok()) << r.out;
    return summary;
  }

  static std::map<v1::Side, int> PidsOf(const v1::Summary& s) {
    std::map<v1::Side, int> pids;
    for (const v1::ServingInstance& i : s.hot_deployment().instances()) pids[i.side()] = i.pid();
    return pids;
  }

  const std::string kSpec = SourcePath("deploy/examples/pd-quick.yaml");
};

TEST_F(LifecycleTest, ReleaseOneSideThenAllThroughTheLane) {
  StartDaemon();
  v1::Experiment base = WaitFinal(Submit({"-f", kSpec, "--set", "workload.num_requests=24"}));
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  std::map<v1::Side, int> held = PidsOf(SummaryJson());
  ASSERT_EQ(held.size(), 3u);
  for (const auto& [side, pid] : held) EXPECT_TRUE(Alive(pid)) << side;
  // The launch stage keeps the exact command it ran.
  ASSERT_EQ(StageOf(base, v1::STAGE_LAUNCH_DECODE).commands_size(), 1);
  EXPECT_THAT(StageOf(base, v1::STAGE_LAUNCH_DECODE).commands(0).text(), HasSubstr("servelab-sim"));

  RunResult bad = Cli({"release", "--side", "gpu"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  for (const auto& [side, pid] : held) EXPECT_TRUE(Alive(pid)) << "a refused release stopped it";

  RunResult decode = Cli({"release", "--side", "decode"});
  ASSERT_EQ(decode.exit_code, 0) << decode.err;
  EXPECT_THAT(decode.out, HasSubstr("released decode"));
  EXPECT_FALSE(Alive(held[v1::SIDE_DECODE]));
  EXPECT_TRUE(Alive(held[v1::SIDE_PREFILL]));
  std::map<v1::Side, int> after = PidsOf(SummaryJson());
  EXPECT_EQ(after.count(v1::SIDE_DECODE), 0u);
  EXPECT_EQ(after[v1::SIDE_PREFILL], held[v1::SIDE_PREFILL]);

  // The next experiment relaunches only what is gone (decode, and the
  // router whose upstream changed), reusing prefill.
  v1::Experiment next = WaitFinal(Submit({"--base", base.id(), "--set", "workload.concurrency=8"}));
  ASSERT_EQ(next.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << next.blocker();
  EXPECT_EQ(StageOf(next, v1::STAGE_LAUNCH_PREFILL).status(), v1::STAGE_STATUS_REUSED);
  EXPECT_EQ(StageOf(next, v1::STAGE_LAUNCH_DECODE).status(), v1::STAGE_STATUS_SUCCEEDED);

  RunResult all = Cli({"release"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_THAT(all.out, HasSubstr("none (the devices are free)"));
  for (const auto& [side, pid] : PidsOf(SummaryJson())) ADD_FAILURE() << "still held: " << side;
  EXPECT_FALSE(Alive(held[v1::SIDE_PREFILL]));
  RunResult summary = Cli({"summary"});
  EXPECT_THAT(summary.out, HasSubstr("none (the devices are free)"));
  RunResult again = Cli({"release"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("nothing to release"));
}

TEST_F(LifecycleTest, ReleaseIsRefusedWhileAnExperimentHoldsTheLane) {
  StartDaemon();
  const std::string id = Submit({"-f", kSpec, "--set", "workload.num_requests=400"});
  ASSERT_TRUE(WaitForFormalRecords());
  RunResult refused = Cli({"release"});
  EXPECT_EQ(refused.exit_code, 5) << refused.out;
  EXPECT_THAT(refused.err, HasSubstr("held by " + id));
  EXPECT_THAT(refused.err, HasSubstr("Nothing was stopped"));
  v1::Experiment done = WaitFinal(id);
  EXPECT_EQ(done.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << done.blocker();
  EXPECT_EQ(done.progress().formal_requests_completed(), 400);
}

TEST_F(LifecycleTest, RepeatsRunTheFormalLoadKTimesAndDecideWithTheSpread) {
  StartDaemon();
  v1::Experiment base = WaitFinal(
      Submit({"-f", kSpec, "--set", "workload.num_requests=32", "--set", "workload.repeats=3"}));
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  EXPECT_EQ(base.progress().formal_requests_planned(), 96);
  EXPECT_EQ(base.progress().formal_requests_completed(), 96);
  ASSERT_EQ(base.result().repeats_size(), 3);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(base.result().repeats(r).repeat(), r + 1);
    EXPECT_EQ(base.result().repeats(r).requests_completed(), 32);
    EXPECT_GT(base.result().repeats(r).value(), 0);
  }
  EXPECT_EQ(base.result().whole().requests_completed(), 32) << "whole describes run 1";

  // The same spec again: any difference is run-to-run noise.
  v1::Experiment same = WaitFinal(
      Submit({"-f", kSpec, "--set", "workload.num_requests=32", "--set", "workload.repeats=3"}));
  ASSERT_EQ(same.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << same.blocker();
  const v1::Decision& d = same.result().decision();
  EXPECT_EQ(d.baseline_experiment_id(), base.id());
  EXPECT_EQ(d.repeats(), 3);
  EXPECT_EQ(d.baseline_repeats(), 3);
  EXPECT_GT(d.delta_spread(), 0);
  if (std::abs(d.delta_fraction()) <= 2 * d.delta_spread()) {
    EXPECT_EQ(d.verdict(), v1::VERDICT_INCONCLUSIVE);
  } else {
    EXPECT_NE(d.verdict(), v1::VERDICT_INCONCLUSIVE);
  }
  RunResult status = Cli({"status", same.id()});
  EXPECT_THAT(status.out, HasSubstr("3 vs 3 runs"));
  EXPECT_THAT(status.out, HasSubstr("run 3:"));

  RunResult bad = Cli({"submit", "--base", base.id(), "--set", "workload.repeats=99"});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_THAT(bad.err, HasSubstr("workload.repeats"));
}

}  // namespace
}  // namespace servelab
