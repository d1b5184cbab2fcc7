#include "analysis/percentile.h"

#include <gtest/gtest.h>

namespace servelab::analysis {
namespace {

TEST(PercentileTest, LinearInterpolationBetweenClosestRanks) {
  std::vector<double> s = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(Percentile(s, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(s, 50), 2.5);  // h = 1.5.
  EXPECT_DOUBLE_EQ(Percentile(s, 90), 3.7);  // h = 2.7.
  EXPECT_DOUBLE_EQ(Percentile(s, 100), 4);
  EXPECT_DOUBLE_EQ(Percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
}

TEST(PercentileTest, SummarizeSortsAndAddsExtraPercentiles) {
  v1::LatencyStats s = Summarize({0.4, 0.1, 0.3, 0.2}, {25});
  EXPECT_DOUBLE_EQ(s.mean(), 0.25);
  EXPECT_DOUBLE_EQ(s.p50(), 0.25);
  EXPECT_NEAR(s.p90(), 0.37, 1e-12);
  EXPECT_NEAR(s.p99(), 0.397, 1e-12);
  EXPECT_DOUBLE_EQ(s.max(), 0.4);
  EXPECT_EQ(s.count(), 4);
  ASSERT_EQ(s.percentiles_size(), 1);
  EXPECT_NEAR(s.percentiles(0).value(), 0.175, 1e-12);  // h = 0.75.
  v1::LatencyStats empty = Summarize({});
  EXPECT_EQ(empty.count(), 0);
  EXPECT_EQ(empty.p99(), 0);
}

}  // namespace
}  // namespace servelab::analysis
