#include "analysis/decision.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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

v1::Result WithRuns(const std::vector<double>& runs) {
  v1::Result r = WithPerCard(runs.front(), 0);
  for (size_t i = 0; i < runs.size(); ++i) {
    v1::RepeatResult& run = *r.add_repeats();
    run.set_repeat(static_cast<int>(i) + 1);
    run.set_value(runs[i]);
  }
  return r;
}

TEST(DecideTest, RepeatsWithinTheirNoiseAreInconclusive) {
  v1::DecisionRule rule;
  rule.set_metric("output_tokens_per_second_per_device");
  rule.set_min_improvement(0.005);
  // The +0.81 % layout gain, with runs that each vary by about 1 %.
  absl::StatusOr<v1::Decision> d =
      Decide(WithRuns({149.1, 150.6, 147.6}), WithRuns({147.9, 149.4, 146.4}), "exp-1", rule);
  ASSERT_THAT(d, IsOk());
  EXPECT_NEAR(d->value(), 149.1, 1e-9);
  EXPECT_NEAR(d->baseline_value(), 147.9, 1e-9);
  EXPECT_NEAR(d->delta_fraction(), 1.2 / 147.9, 1e-9);
  // Sample sd 1.5 on each side: SE = sqrt(2 * 1.5^2 / 3) = 1.2247.
  EXPECT_NEAR(d->delta_spread(), std::sqrt(2 * 2.25 / 3) / 147.9, 1e-9);
  EXPECT_EQ(d->repeats(), 3);
  EXPECT_EQ(d->baseline_repeats(), 3);
  EXPECT_EQ(d->verdict(), v1::VERDICT_INCONCLUSIVE);

  // The same gain with tight runs is a real one.
  d = Decide(WithRuns({149.10, 149.12, 149.08}), WithRuns({147.90, 147.92, 147.88}), "exp-1", rule);
  ASSERT_THAT(d, IsOk());
  EXPECT_EQ(d->verdict(), v1::VERDICT_KEEP);
  // A single run on each side has no spread: the old rule applies.
  d = Decide(WithPerCard(149.1070, 0), WithPerCard(147.9064, 0), "exp-1", rule);
  EXPECT_EQ(d->delta_spread(), 0);
  EXPECT_EQ(d->verdict(), v1::VERDICT_KEEP);
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

TEST(BetterTest, RanksInTheMetricsBetterDirectionByTheMeanOfRuns) {
  v1::DecisionRule rule;
  rule.set_metric("output_tokens_per_second_per_device");
  EXPECT_EQ(Better(WithPerCard(2, 0), WithPerCard(1, 0), rule).value(), true);
  EXPECT_EQ(Better(WithPerCard(1, 0), WithPerCard(2, 0), rule).value(), false);
  EXPECT_EQ(Better(WithPerCard(1, 0), WithPerCard(1, 0), rule).value(), false);  // strictly
  EXPECT_EQ(Better(WithPerCard(1, 0), WithPerCard(0, 0), rule).value(), true);   // 0 is a value
  // The runs' mean, not the single value, as Decide compares.
  EXPECT_EQ(Better(WithRuns({10, 10, 10}), WithRuns({12, 1, 1}), rule).value(), true);
  rule.set_metric("ttft.p99");
  rule.set_window(v1::WINDOW_STEADY);
  v1::Result quick, slow;
  quick.mutable_steady()->mutable_ttft()->set_p99(0.5);
  slow.mutable_steady()->mutable_ttft()->set_p99(0.9);
  EXPECT_EQ(Better(quick, slow, rule).value(), true);
  EXPECT_EQ(Better(slow, quick, rule).value(), false);
  rule.set_metric("tokens_per_dollar");
  EXPECT_THAT(Better(quick, slow, rule),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("analysis.decision.metric")));
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
