#include "analysis/decision.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace servelab::analysis {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

v1::Result WithPerCard(double whole, double steady) {
  v1::Result r;
  r.mutable_whole()->set_output_tokens_per_second_per_device(whole);
  r.mutable_steady()->set_output_tokens_per_second_per_device(steady);
  return r;
}

TEST(DecideTest, FittedLayoutIsASmallRealGain) {
  // docs/design.md §1: 147.9064 -> 149.1070 tok/s per device, +0.81%.
  v1::DecisionRule rule;
  rule.set_metric("output_tokens_per_second_per_device");
  rule.set_min_improvement(0.005);
  absl::StatusOr<v1::Decision> d =
      Decide(WithPerCard(149.1070, 0), WithPerCard(147.9064, 0), "exp-1", rule);
  ASSERT_THAT(d, IsOk());
  EXPECT_NEAR(d->delta_fraction(), (149.1070 - 147.9064) / 147.9064, 1e-12);
  EXPECT_EQ(d->verdict(), v1::VERDICT_KEEP);
  EXPECT_EQ(d->metric(), "whole.output_tokens_per_second_per_device");
  rule.set_min_improvement(0.01);
  EXPECT_EQ(Decide(WithPerCard(149.1070, 0), WithPerCard(147.9064, 0), "exp-1", rule)->verdict(),
            v1::VERDICT_DISCARD);
}

TEST(DecideTest, SteadyWindowAndLowerIsBetterLatency) {
  v1::DecisionRule rule;
  rule.set_metric("ttft.p99");
  rule.set_window(v1::WINDOW_STEADY);
  rule.set_min_improvement(0.05);
  v1::Result cand, base;
  cand.mutable_steady()->mutable_ttft()->set_p99(0.9);
  base.mutable_steady()->mutable_ttft()->set_p99(1.0);
  absl::StatusOr<v1::Decision> d = Decide(cand, base, "exp-2", rule);
  ASSERT_THAT(d, IsOk());
  EXPECT_NEAR(d->delta_fraction(), -0.1, 1e-12);
  EXPECT_EQ(d->verdict(), v1::VERDICT_KEEP);
}

TEST(DecideTest, UnknownMetricNamesTheField) {
  v1::DecisionRule rule;
  rule.set_metric("tokens_per_dollar");
  EXPECT_THAT(Decide(WithPerCard(1, 1), WithPerCard(1, 1), "exp-1", rule),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("analysis.decision.metric")));
  rule.set_metric("name");
  EXPECT_THAT(Decide(WithPerCard(1, 1), WithPerCard(1, 1), "exp-1", rule),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a number")));
}

}  // namespace
}  // namespace servelab::analysis
