#include "loadgen/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "tests/testing/status_matchers.h"

namespace servelab::loadgen {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::Each;
using ::testing::Eq;
using ::testing::HasSubstr;

v1::WorkloadSpec Workload(double rate, v1::Arrival arrival, double burstiness = 0) {
  v1::WorkloadSpec w;
  w.set_request_rate(rate);
  w.set_arrival(arrival);
  w.set_burstiness(burstiness);
  w.mutable_dataset()->set_seed(7);
  return w;
}

// Mean and coefficient of variation of the gaps.
std::pair<double, double> GapStats(const std::vector<int64_t>& t) {
  std::vector<double> gaps;
  for (size_t i = 1; i < t.size(); ++i) gaps.push_back((t[i] - t[i - 1]) / 1e9);
  double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / gaps.size();
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  return {mean, std::sqrt(var / gaps.size()) / mean};
}

TEST(ScheduleTest, NoRateSendsEverythingAtOnce) {
  auto t = PlanArrivals(Workload(0, v1::ARRIVAL_POISSON), 5);
  ASSERT_THAT(t, IsOk());
  EXPECT_THAT(*t, Each(Eq(0)));
}

TEST(ScheduleTest, ConstantIsExact) {
  auto t = PlanArrivals(Workload(4, v1::ARRIVAL_CONSTANT), 5);
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(*t, (std::vector<int64_t>{0, 250'000'000, 500'000'000, 750'000'000, 1'000'000'000}));
}

TEST(ScheduleTest, PoissonHasTheRateAndUnitVariation) {
  auto t = PlanArrivals(Workload(1000, v1::ARRIVAL_POISSON), 20001);
  ASSERT_THAT(t, IsOk());
  auto [mean, cv] = GapStats(*t);
  EXPECT_NEAR(mean, 1e-3, 3e-5);
  EXPECT_NEAR(cv, 1.0, 0.03);
  EXPECT_EQ(*t, *PlanArrivals(Workload(1000, v1::ARRIVAL_POISSON), 20001));  // Deterministic.
}

TEST(ScheduleTest, GammaBurstinessSetsTheVariation) {
  for (double shape : {0.25, 1.0, 4.0}) {
    auto t = PlanArrivals(Workload(50, v1::ARRIVAL_GAMMA, shape), 20001);
    ASSERT_THAT(t, IsOk());
    auto [mean, cv] = GapStats(*t);
    EXPECT_NEAR(mean, 0.02, 0.02 * 0.05) << shape;
    EXPECT_NEAR(cv, 1 / std::sqrt(shape), 0.06 / std::sqrt(shape)) << shape;
  }
}

TEST(ScheduleTest, RejectsNegativeRate) {
  EXPECT_THAT(PlanArrivals(Workload(-1, v1::ARRIVAL_POISSON), 3),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("workload.request_rate")));
}

}  // namespace
}  // namespace servelab::loadgen
