#include "daemon/core/planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/labels.h"
#include "daemon/core/spec/freeze.h"
#include "daemon/core/spec/scope.h"
#include "daemon/core/spec/spec_delta.h"
#include "daemon/core/stage_table.h"
#include "google/protobuf/util/time_util.h"
#include "tests/testing/status_matchers.h"

namespace servelab::core {
namespace {

using servelab::testing::IsOk;
using ::testing::HasSubstr;

v1::ExperimentSpec Frozen(const std::vector<std::string>& sets) {
  v1::ExperimentSpec spec;
  spec.set_scenario("s");
  spec.mutable_deployment()->mutable_prefill()->add_devices(0);
  spec.mutable_deployment()->mutable_decode()->add_devices(1);
  spec.mutable_workload()->mutable_dataset()->set_input_tokens(1000);
  spec.mutable_workload()->mutable_dataset()->set_output_tokens(10);
  spec.mutable_workload()->set_num_requests(64);
  spec.mutable_workload()->set_concurrency(8);
  for (const std::string& s : sets) EXPECT_THAT(spec::ApplySet(spec, s), IsOk()) << s;
  absl::StatusOr<spec::FrozenSpec> frozen = spec::Freeze(spec, "");
  EXPECT_THAT(frozen, IsOk());
  return frozen->spec;
}

std::map<v1::StageName, v1::PlannedStage> ByStage(const v1::Plan& plan) {
  std::map<v1::StageName, v1::PlannedStage> out;
  for (const v1::PlannedStage& s : plan.stages()) out[s.stage()] = s;
  return out;
}

HotDeployment HotFor(const v1::ExperimentSpec& spec) {
  HotDeployment hot{
      .experiment_id = "exp-1", .fingerprints = spec::ComputeFingerprints(spec), .warm = true};
  return hot;
}

TEST(PlannerTest, NothingRunningRunsEveryStage) {
  v1::ExperimentSpec spec =
      Frozen({"workload.dataset.prefix_cache_ratio=0.9", "workload.dataset.prefix_groups=4"});
  v1::Plan plan = MakePlan({.spec = spec});
  ASSERT_EQ(plan.stages_size(), static_cast<int>(StageTable().size()));
  for (const v1::PlannedStage& s : plan.stages()) {
    EXPECT_EQ(s.action(), v1::STAGE_ACTION_RUN) << StageLabel(s.stage()) << ": " << s.reason();
  }
  EXPECT_THAT(ByStage(plan)[v1::STAGE_LAUNCH_DECODE].reason(), HasSubstr("no decode instance"));
  EXPECT_TRUE(plan.adds_launch());
  EXPECT_TRUE(plan.adds_warmup());
  EXPECT_EQ(plan.planned_against(), "");
}

TEST(PlannerTest, ConcurrencyDeltaReusesTheHotDeployment) {
  v1::ExperimentSpec base = Frozen({});
  v1::ExperimentSpec next = Frozen({"workload.concurrency=96"});
  v1::Plan plan = MakePlan({.spec = next, .hot = HotFor(base)});
  auto stages = ByStage(plan);
  for (v1::StageName s : {v1::STAGE_LAUNCH_PREFILL, v1::STAGE_LAUNCH_DECODE,
                          v1::STAGE_LAUNCH_ROUTER, v1::STAGE_WARMUP, v1::STAGE_ROUTE_VERIFY}) {
    EXPECT_EQ(stages[s].action(), v1::STAGE_ACTION_REUSE) << StageLabel(s);
  }
  EXPECT_THAT(stages[v1::STAGE_LAUNCH_DECODE].reason(),
              HasSubstr("decode fingerprint unchanged " + ShortHash(plan.fingerprints().decode())));
  EXPECT_EQ(stages[v1::STAGE_CACHE_RESET].action(), v1::STAGE_ACTION_RUN);
  EXPECT_EQ(stages[v1::STAGE_CACHE_SEED].action(), v1::STAGE_ACTION_SKIP);
  EXPECT_EQ(stages[v1::STAGE_FORMAL_LOAD].action(), v1::STAGE_ACTION_RUN);
  EXPECT_THAT(stages[v1::STAGE_FORMAL_LOAD].reason(), HasSubstr("concurrency 96"));
  EXPECT_FALSE(plan.adds_launch());
  EXPECT_FALSE(plan.adds_warmup());
  EXPECT_EQ(plan.planned_against(), "exp-1");
}

TEST(PlannerTest, DecodeDeltaRelaunchesDecodeAndRouterOnly) {
  v1::ExperimentSpec base = Frozen({});
  v1::ExperimentSpec next = Frozen({"deployment.decode.max_num_seqs=64"});
  auto stages = ByStage(MakePlan({.spec = next, .hot = HotFor(base)}));
  EXPECT_EQ(stages[v1::STAGE_LAUNCH_PREFILL].action(), v1::STAGE_ACTION_REUSE);
  EXPECT_EQ(stages[v1::STAGE_LAUNCH_DECODE].action(), v1::STAGE_ACTION_RUN);
  EXPECT_THAT(stages[v1::STAGE_LAUNCH_DECODE].reason(), HasSubstr("relaunch decode"));
  EXPECT_EQ(stages[v1::STAGE_LAUNCH_ROUTER].action(), v1::STAGE_ACTION_RUN);
  EXPECT_EQ(stages[v1::STAGE_WARMUP].action(), v1::STAGE_ACTION_RUN);
  EXPECT_EQ(stages[v1::STAGE_ROUTE_VERIFY].action(), v1::STAGE_ACTION_RUN);
}

// Decode's DP is read by prefill's launch as well (vllm-ascend Mooncake):
// the plan relaunches both sides and says why.
TEST(PlannerTest, DecodeParallelDeltaRelaunchesBothSides) {
  v1::ExperimentSpec base = Frozen({});
  v1::ExperimentSpec next =
      Frozen({"deployment.decode.data_parallel=2", "deployment.decode.devices=[1, 2]"});
  auto stages = ByStage(MakePlan({.spec = next, .hot = HotFor(base)}));
  EXPECT_EQ(stages[v1::STAGE_LAUNCH_PREFILL].action(), v1::STAGE_ACTION_RUN);
  EXPECT_THAT(stages[v1::STAGE_LAUNCH_PREFILL].reason(), HasSubstr("prefill fingerprint"));
  EXPECT_EQ(stages[v1::STAGE_LAUNCH_DECODE].action(), v1::STAGE_ACTION_RUN);
  EXPECT_EQ(stages[v1::STAGE_LAUNCH_ROUTER].action(), v1::STAGE_ACTION_RUN);
}

TEST(PlannerTest, WarmupChangeReWarmsWithoutRelaunch) {
  v1::ExperimentSpec base = Frozen({});
  v1::ExperimentSpec next = Frozen({"deployment.warmup.requests=32"});
  auto stages = ByStage(MakePlan({.spec = next, .hot = HotFor(base)}));
  EXPECT_EQ(stages[v1::STAGE_LAUNCH_DECODE].action(), v1::STAGE_ACTION_REUSE);
  EXPECT_EQ(stages[v1::STAGE_WARMUP].action(), v1::STAGE_ACTION_RUN);
  EXPECT_THAT(stages[v1::STAGE_WARMUP].reason(), HasSubstr("re-warm"));
}

TEST(PlannerTest, AnalysisOnlyDeltaReusesRawRecords) {
  v1::ExperimentSpec next = Frozen({"analysis.slo.ttft=2s"});
  v1::Plan plan = MakePlan({.spec = next, .reanalysis = ReanalysisSource{"exp-3"}});
  auto stages = ByStage(plan);
  EXPECT_EQ(stages[v1::STAGE_FORMAL_LOAD].action(), v1::STAGE_ACTION_SKIP);
  EXPECT_EQ(stages[v1::STAGE_LAUNCH_PREFILL].action(), v1::STAGE_ACTION_SKIP);
  EXPECT_EQ(stages[v1::STAGE_ANALYZE].action(), v1::STAGE_ACTION_RUN);
  EXPECT_EQ(plan.raw_records_from(), "exp-3");
  EXPECT_FALSE(plan.adds_launch());
}

TEST(PlannerTest, PredictsPreparationFromHistoryOfStagesThatRun) {
  v1::ExperimentSpec base = Frozen({});
  v1::ExperimentSpec next = Frozen({"workload.concurrency=96"});
  PlanInput input{.spec = next, .hot = HotFor(base)};
  input.history[v1::STAGE_PREFLIGHT] = absl::Milliseconds(200);
  input.history[v1::STAGE_LAUNCH_DECODE] = absl::Seconds(60);  // Reused: not counted.
  input.history[v1::STAGE_CACHE_RESET] = absl::Milliseconds(50);
  input.history[v1::STAGE_FORMAL_LOAD] = absl::Seconds(180);  // Not preparation.
  v1::Plan plan = MakePlan(input);
  EXPECT_EQ(google::protobuf::util::TimeUtil::DurationToMilliseconds(plan.predicted_preparation()),
            250);
}

}  // namespace
}  // namespace servelab::core
