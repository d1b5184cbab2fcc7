#include "common/labels.h"

#include <gtest/gtest.h>

namespace servelab {
namespace {

TEST(LabelsTest, EachEnumHasOneLowerCaseSpelling) {
  EXPECT_EQ(StateLabel(v1::EXPERIMENT_STATE_SUCCEEDED), "succeeded");
  EXPECT_EQ(StageLabel(v1::STAGE_FORMAL_LOAD), "formal_load");
  EXPECT_EQ(ActionLabel(v1::STAGE_ACTION_REUSE), "reuse");
  EXPECT_EQ(StageStatusLabel(v1::STAGE_STATUS_SKIPPED), "skipped");
  EXPECT_EQ(SideLabel(v1::SIDE_PREFILL), "prefill");
  EXPECT_EQ(PhaseLabel(v1::PHASE_ROUTE_VERIFY), "route_verify");
  EXPECT_EQ(VerdictLabel(v1::VERDICT_DISCARD), "discard");
}

TEST(LabelsTest, UnknownNumbersReadUnknown) {
  EXPECT_EQ(StageLabel(static_cast<v1::StageName>(999)), "unknown");
  EXPECT_EQ(SideLabel(static_cast<v1::Side>(77)), "unknown");
}

TEST(LabelsTest, OnlyTheThreeEndStatesAreFinal) {
  EXPECT_TRUE(IsFinal(v1::EXPERIMENT_STATE_SUCCEEDED));
  EXPECT_TRUE(IsFinal(v1::EXPERIMENT_STATE_FAILED));
  EXPECT_TRUE(IsFinal(v1::EXPERIMENT_STATE_CANCELLED));
  EXPECT_FALSE(IsFinal(v1::EXPERIMENT_STATE_RUNNING));
  EXPECT_FALSE(IsFinal(v1::EXPERIMENT_STATE_QUEUED));
}

}  // namespace
TEST(LabelsTest, AnInstanceIsPlacedByPidOrSlurmStep) {
  v1::ServingInstance local;
  local.set_pid(4242);
  EXPECT_EQ(InstancePlace(local), "pid 4242");
  v1::ServingInstance step = local;
  step.mutable_placed()->set_kind(v1::PLACEMENT_KIND_SLURM);
  step.mutable_placed()->set_step_id("42.3");
  step.mutable_placed()->set_node("n1");
  EXPECT_EQ(InstancePlace(step), "Slurm step 42.3 on node n1");
}

}  // namespace servelab
