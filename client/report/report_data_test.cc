#include "client/report/report_data.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "client/report/testing/synthetic_report.h"

namespace servelab::client::report {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::Pointwise;
using testing::SyntheticRecord;

constexpr double kTolerance = 1e-9;

MATCHER(CdfEq, "") {
  const CdfPoint& p = std::get<0>(arg);
  const CdfPoint& q = std::get<1>(arg);
  return std::abs(p.value - q.value) < 1e-9 && std::abs(p.fraction - q.fraction) < 1e-9;
}

MATCHER(InflightEq, "") {
  const InflightPoint& p = std::get<0>(arg);
  const InflightPoint& q = std::get<1>(arg);
  return std::abs(p.seconds - q.seconds) < 1e-9 && p.in_flight == q.in_flight;
}

// Sent at 0, first token at 0.1 s, chunks at 0.1, 0.15, 0.25 s.
std::vector<v1::RequestRecord> TinyRecords() {
  v1::RequestRecord ok = SyntheticRecord(0, 0, 0.1, 3, 0.05);
  ok.set_chunk_ns(2, 250'000'000);
  ok.set_end_ns(250'000'000);
  v1::RequestRecord failed = SyntheticRecord(1, 0, 0.2, 3, 0.05);
  failed.set_error("stream reset");
  v1::RequestRecord server_error = SyntheticRecord(2, 0, 0.3, 3, 0.05);
  server_error.set_http_status(500);
  v1::RequestRecord never_sent;
  never_sent.set_http_status(200);
  return {ok, failed, server_error, never_sent};
}

TEST(LatencySamplesTest, KnownValuesFromCompletedRecordsOnly) {
  std::vector<v1::RequestRecord> records = TinyRecords();
  EXPECT_THAT(LatencySamples(records, Latency::kTtft), ElementsAre(DoubleNear(0.1, kTolerance)));
  EXPECT_THAT(LatencySamples(records, Latency::kTpot), ElementsAre(DoubleNear(0.075, kTolerance)));
  EXPECT_THAT(LatencySamples(records, Latency::kItl),
              ElementsAre(DoubleNear(0.05, kTolerance), DoubleNear(0.1, kTolerance)));
  EXPECT_THAT(LatencySamples(records, Latency::kE2e), ElementsAre(DoubleNear(0.25, kTolerance)));
}

TEST(LatencySamplesTest, NoTpotForOneTokenNoTtftWithoutToken) {
  v1::RequestRecord one = SyntheticRecord(0, 0, 0.1, 1, 0.05);
  v1::RequestRecord no_token = SyntheticRecord(1, 0, 0.1, 1, 0.05);
  no_token.set_first_token_ns(0);
  EXPECT_THAT(LatencySamples({one, no_token}, Latency::kTpot), ElementsAre());
  EXPECT_THAT(LatencySamples({one, no_token}, Latency::kTtft), ElementsAre(DoubleNear(0.1, 1e-9)));
  EXPECT_EQ(LatencySamples({one, no_token}, Latency::kE2e).size(), 2u);
}

TEST(EmpiricalCdfTest, EverySampleWhenFew) {
  EXPECT_THAT(EmpiricalCdf({3, 1, 2}),
              Pointwise(CdfEq(), std::vector<CdfPoint>{{1, 1.0 / 3}, {2, 2.0 / 3}, {3, 1}}));
  EXPECT_THAT(EmpiricalCdf({0.5, 0.5}),
              Pointwise(CdfEq(), std::vector<CdfPoint>{{0.5, 0.5}, {0.5, 1}}));
  EXPECT_TRUE(EmpiricalCdf({}).empty());
}

TEST(EmpiricalCdfTest, DownsamplesKeepingEnds) {
  std::vector<double> samples;
  for (int i = 9999; i >= 0; --i) samples.push_back(i);
  std::vector<CdfPoint> cdf = EmpiricalCdf(samples, 500);
  ASSERT_EQ(cdf.size(), 500u);
  EXPECT_EQ(cdf.front().value, 0);
  EXPECT_NEAR(cdf.front().fraction, 1e-4, 1e-12);
  EXPECT_EQ(cdf.back().value, 9999);
  EXPECT_EQ(cdf.back().fraction, 1);
  EXPECT_TRUE(std::is_sorted(cdf.begin(), cdf.end(), [](const CdfPoint& a, const CdfPoint& b) {
    return a.fraction < b.fraction;
  }));
  // Rank 5000 of 10000 (value 4999) sits at fraction 0.5 wherever kept.
  for (const CdfPoint& p : cdf) EXPECT_NEAR(p.fraction, (p.value + 1) / 10000, 1e-12);
}

v1::RequestRecord Span(double sent_s, double end_s) {
  v1::RequestRecord r = SyntheticRecord(0, sent_s, 0.001, 1, 0);
  r.set_end_ns(static_cast<int64_t>(end_s * 1e9));
  return r;
}

TEST(InflightSeriesTest, StepsAtEverySendAndEnd) {
  std::vector<v1::RequestRecord> records = {Span(0, 2), Span(1, 3)};
  EXPECT_THAT(
      InflightSeries(records, WindowRun(records)),
      Pointwise(InflightEq(), std::vector<InflightPoint>{
                                  {0, 0}, {0, 1}, {1, 1}, {1, 2}, {2, 2}, {2, 1}, {3, 1}, {3, 0}}));
}

TEST(InflightSeriesTest, HandoffAtTheSameInstantIsNoChange) {
  std::vector<v1::RequestRecord> records = {Span(0, 1), Span(1, 2)};
  EXPECT_THAT(InflightSeries(records, WindowRun(records)),
              Pointwise(InflightEq(), std::vector<InflightPoint>{{0, 0}, {0, 1}, {2, 1}, {2, 0}}));
}

TEST(InflightSeriesTest, DownsamplesKeepingPeaksAndDips) {
  std::vector<v1::RequestRecord> records;
  for (int i = 0; i < 5000; ++i) records.push_back(Span(i * 0.01, i * 0.01 + 0.035));
  records.push_back(Span(20, 20.001));  // A lone request inside a long stretch of 4.
  std::vector<InflightPoint> series = InflightSeries(records, WindowRun(records), 1000);
  ASSERT_LE(series.size(), 1000u);
  auto max = std::max_element(series.begin(), series.end(),
                              [](auto& a, auto& b) { return a.in_flight < b.in_flight; });
  EXPECT_EQ(max->in_flight, 5);
  EXPECT_EQ(series.back().in_flight, 0);
  EXPECT_TRUE(std::is_sorted(series.begin(), series.end(),
                             [](auto& a, auto& b) { return a.seconds < b.seconds; }));
}

TEST(WindowRunTest, LastAttemptFirstRepeat) {
  v1::RequestRecord a = Span(0, 1), b = Span(0, 1), c = Span(0, 1), d = Span(0, 1);
  a.set_attempt(1);
  b.set_attempt(2);
  b.set_repeat(3);
  c.set_attempt(2);
  c.set_repeat(2);
  d.set_attempt(2);
  d.set_repeat(2);
  d.mutable_load_start()->set_seconds(1234);
  RunKey run = WindowRun({a, b, c, d});
  EXPECT_EQ(run.attempt, 2);
  EXPECT_EQ(run.repeat, 2);
  EXPECT_EQ(LoadStart({a, b, c, d}, run), absl::FromUnixSeconds(1234));
  EXPECT_EQ(LoadStart({a, b, c}, run), std::nullopt);
}

TEST(WindowRunTest, RepeatZeroReadsAsOne) {
  v1::RequestRecord r = Span(0, 1);
  r.set_repeat(0);
  EXPECT_EQ(WindowRun({r}).repeat, 1);
  EXPECT_EQ(InflightSeries({r}, WindowRun({r})).size(), 4u);
}

}  // namespace
}  // namespace servelab::client::report
