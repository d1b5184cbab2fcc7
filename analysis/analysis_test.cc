// Golden tests: every figure below is computed by hand from the records in
// GoldenRecords() (times in ms; see the comments beside each expectation).
#include "analysis/analysis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "analysis/report.h"
#include "google/protobuf/util/time_util.h"
#include "tests/testing/status_matchers.h"

namespace servelab::analysis {
namespace {

using ::google::protobuf::util::TimeUtil;
using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMs = 1'000'000;
constexpr double kEps = 1e-9;

v1::RequestRecord Rec(v1::Phase phase, int index, int64_t planned, int64_t sent, int64_t queued,
                      std::vector<int64_t> chunks, int64_t end, int prompt, int completion,
                      int cached, int status = 200) {
  v1::RequestRecord r;
  r.set_experiment_id("exp-1");
  r.set_phase(phase);
  r.set_attempt(1);
  r.set_request_index(index);
  r.set_planned_send_ns(planned * kMs);
  r.set_sent_ns(sent * kMs);
  r.set_queued_ns(queued * kMs);
  for (int64_t c : chunks) r.add_chunk_ns(c * kMs);
  if (!chunks.empty()) r.set_first_token_ns(chunks.front() * kMs);
  r.set_end_ns(end * kMs);
  r.set_prompt_tokens(prompt);
  r.set_completion_tokens(completion);
  r.set_cached_tokens(cached);
  r.set_http_status(status);
  if (status != 200) r.set_error("http 500");
  r.set_requested_prompt_tokens(10);
  r.set_requested_completion_tokens(completion);
  return r;
}

// Formal load, C = 2:
//   R0 sent 1,  chunks 11 21 31,    end 31, out 3, cached 0
//   R1 sent 2,  chunks 22 32,       end 32, out 2 (3 asked), cached 5
//   R2 sent 31, chunks 41 46 56 81, end 81, out 4, cached 5 (planned 10, queued 20)
//   R3 sent 33, HTTP 500,           end 34           (planned 20, queued 12)
//   R4 never sent (cancelled in the client queue)
// Cache seed: two requests, sent 5 -> end 45 and sent 6 -> end 36.
std::vector<v1::RequestRecord> GoldenRecords() {
  std::vector<v1::RequestRecord> rs;
  rs.push_back(Rec(v1::PHASE_CACHE_SEED, 0, 5, 5, 0, {40}, 45, 10, 1, 0));
  rs.push_back(Rec(v1::PHASE_CACHE_SEED, 1, 6, 6, 0, {30}, 36, 10, 1, 0));
  rs.push_back(Rec(v1::PHASE_FORMAL, 0, 0, 1, 0, {11, 21, 31}, 31, 10, 3, 0));
  rs.push_back(Rec(v1::PHASE_FORMAL, 1, 0, 2, 0, {22, 32}, 32, 10, 2, 5));
  rs.back().set_requested_completion_tokens(3);
  rs.push_back(Rec(v1::PHASE_FORMAL, 2, 10, 31, 20, {41, 46, 56, 81}, 81, 10, 4, 5));
  rs.push_back(Rec(v1::PHASE_FORMAL, 3, 20, 33, 12, {}, 34, 0, 0, 0, 500));
  v1::RequestRecord never_sent;
  never_sent.set_phase(v1::PHASE_FORMAL);
  never_sent.set_request_index(4);
  never_sent.set_planned_send_ns(30 * kMs);
  never_sent.set_error("cancelled before send");
  rs.push_back(never_sent);
  return rs;
}

v1::ExperimentSpec GoldenSpec() {
  v1::ExperimentSpec spec;
  spec.mutable_workload()->set_concurrency(2);
  spec.mutable_deployment()->mutable_prefill()->add_devices(0);
  spec.mutable_deployment()->mutable_decode()->add_devices(1);
  spec.mutable_analysis()->add_percentiles(75);
  *spec.mutable_analysis()->mutable_slo()->mutable_ttft() = TimeUtil::MillisecondsToDuration(15);
  *spec.mutable_analysis()->mutable_slo()->mutable_tpot() = TimeUtil::MillisecondsToDuration(12);
  return spec;
}

void ExpectStats(const v1::LatencyStats& s, double mean_ms, double p50_ms, double p90_ms,
                 double p99_ms, double max_ms, int64_t count) {
  EXPECT_NEAR(s.mean(), mean_ms / 1e3, kEps);
  EXPECT_NEAR(s.p50(), p50_ms / 1e3, kEps);
  EXPECT_NEAR(s.p90(), p90_ms / 1e3, kEps);
  EXPECT_NEAR(s.p99(), p99_ms / 1e3, kEps);
  EXPECT_NEAR(s.max(), max_ms / 1e3, kEps);
  EXPECT_EQ(s.count(), count);
}

TEST(AnalyzeTest, WholeWindowGolden) {
  absl::StatusOr<v1::Result> r = Analyze(GoldenRecords(), GoldenSpec());
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->analyzed_phase(), v1::PHASE_FORMAL);
  EXPECT_EQ(r->device_count(), 2);  // 1 prefill + 1 decode device.
  const v1::WindowResult& w = r->whole();
  EXPECT_EQ(w.name(), "whole");
  EXPECT_NEAR(w.start_seconds(), 0.001, kEps);  // First send.
  EXPECT_NEAR(w.end_seconds(), 0.081, kEps);    // Last end.
  EXPECT_NEAR(w.duration_seconds(), 0.080, kEps);
  EXPECT_EQ(w.requests_completed(), 3);
  EXPECT_EQ(w.requests_failed(), 1);
  EXPECT_EQ(w.output_tokens(), 9);
  EXPECT_NEAR(w.request_throughput(), 3 / 0.080, kEps);                       // 37.5
  EXPECT_NEAR(w.output_tokens_per_second(), 9 / 0.080, kEps);                 // 112.5
  EXPECT_NEAR(w.output_tokens_per_second_per_device(), 9 / 0.080 / 2, kEps);  // 56.25
  // SLO ttft <= 15 ms and tpot <= 12 ms: R0 (10, 10) yes; R1 ttft 20 no; R2 tpot 13.3 no.
  EXPECT_NEAR(w.goodput(), 1 / 0.080, kEps);
  // TTFT {10, 10, 20}: p90 h = 1.8 -> 10 + 0.8 * 10; p99 h = 1.98.
  ExpectStats(w.ttft(), 40.0 / 3, 10, 18, 19.8, 20, 3);
  ASSERT_EQ(w.ttft().percentiles_size(), 1);
  EXPECT_EQ(w.ttft().percentiles(0).percentile(), 75);
  EXPECT_NEAR(w.ttft().percentiles(0).value(), 0.015, kEps);  // h = 1.5.
  // TPOT: R0 (30-10)/2 = 10, R1 (30-20)/1 = 10, R2 (50-10)/3 = 13.333.
  ExpectStats(w.tpot(), (10 + 10 + 40.0 / 3) / 3, 10, 10 + 0.8 * 10.0 / 3, 10 + 0.98 * 10.0 / 3,
              40.0 / 3, 3);
  // ITL {10, 10 | 10 | 5, 10, 25} sorted 5 10 10 10 10 25: p50 h = 2.5, p90 h = 4.5, p99 h = 4.95.
  ExpectStats(w.itl(), 70.0 / 6, 10, 17.5, 24.25, 25, 6);
  // E2E {30, 30, 50}.
  ExpectStats(w.e2e(), 110.0 / 3, 30, 46, 49.6, 50, 3);
}

TEST(AnalyzeTest, SteadyWindowGolden) {
  absl::StatusOr<v1::Result> r = Analyze(GoldenRecords(), GoldenSpec());
  ASSERT_THAT(r, IsOk());
  const v1::WindowResult& s = r->steady();
  EXPECT_EQ(s.name(), "steady");
  EXPECT_EQ(s.steady_min_inflight(), 2);
  // In flight reaches 2 at 2 ms (R1 sent); last drop below 2 at 34 ms (R3 ends).
  EXPECT_NEAR(s.start_seconds(), 0.002, kEps);
  EXPECT_NEAR(s.end_seconds(), 0.034, kEps);
  EXPECT_NEAR(s.duration_seconds(), 0.032, kEps);
  // Ending inside: R0 (31), R1 (32), R3 (34, failed); R2 ends at 81.
  EXPECT_EQ(s.requests_completed(), 2);
  EXPECT_EQ(s.requests_failed(), 1);
  EXPECT_EQ(s.output_tokens(), 5);
  EXPECT_NEAR(s.request_throughput(), 2 / 0.032, kEps);        // 62.5
  EXPECT_NEAR(s.output_tokens_per_second(), 5 / 0.032, kEps);  // 156.25
  EXPECT_NEAR(s.output_tokens_per_second_per_device(), 5 / 0.032 / 2, kEps);
  EXPECT_NEAR(s.goodput(), 1 / 0.032, kEps);  // R0 only.
  ExpectStats(s.ttft(), 15, 15, 19, 19.9, 20, 2);
  ExpectStats(s.tpot(), 10, 10, 10, 10, 10, 2);
  ExpectStats(s.itl(), 10, 10, 10, 10, 10, 3);
  ExpectStats(s.e2e(), 30, 30, 30, 30, 30, 2);
}

TEST(AnalyzeTest, LagQueueExactnessCacheAndPhasesGolden) {
  absl::StatusOr<v1::Result> r = Analyze(GoldenRecords(), GoldenSpec());
  ASSERT_THAT(r, IsOk());
  // Lag {1, 2, 21, 13} -> sorted 1 2 13 21: p50 h = 1.5 -> 7.5; p99 h = 2.97 -> 13 + 0.97 * 8.
  EXPECT_NEAR(r->schedule_lag_p50(), 0.0075, kEps);
  EXPECT_NEAR(r->schedule_lag_p99(), 0.02076, kEps);
  // Queue {0, 0, 20, 12}: p50 6, p99 12 + 0.97 * 8.
  EXPECT_NEAR(r->client_queue_p50(), 0.006, kEps);
  EXPECT_NEAR(r->client_queue_p99(), 0.01976, kEps);
  const v1::Exactness& e = r->exactness();
  EXPECT_EQ(e.requests(), 3);
  EXPECT_EQ(e.exact_input(), 3);
  EXPECT_EQ(e.exact_output(), 2);  // R1 got 2 of 3.
  EXPECT_THAT(e.deviating_index(), ElementsAre(1));
  EXPECT_EQ(e.chunk_count_mismatch(), 0);
  EXPECT_NEAR(r->prefix_cache_hit_ratio(), 10.0 / 30, kEps);
  EXPECT_TRUE(r->cached_tokens_reported());
  ASSERT_EQ(r->phases_size(), 2);
  EXPECT_EQ(r->phases(0).phase(), v1::PHASE_CACHE_SEED);
  EXPECT_EQ(r->phases(0).requests(), 2);
  EXPECT_NEAR(r->phases(0).wall_seconds(), 0.040, kEps);                    // 5 -> 45.
  EXPECT_NEAR(r->phases(0).summed_request_latency_seconds(), 0.070, kEps);  // 40 + 30.
  EXPECT_EQ(r->phases(1).phase(), v1::PHASE_FORMAL);
  EXPECT_EQ(r->phases(1).requests(), 5);
  EXPECT_NEAR(r->phases(1).wall_seconds(), 0.080, kEps);
  EXPECT_NEAR(r->phases(1).summed_request_latency_seconds(), 0.111, kEps);  // 30+30+50+1.
}

// A server that reports no cached tokens at all (vLLM without
// --enable-prompt-tokens-details) gives "not reported", never a ratio of 0;
// once one request reported, vLLM's omitted count for the others is 0.
TEST(AnalyzeTest, CachedTokensNotReportedIsNotZero) {
  std::vector<v1::RequestRecord> records = GoldenRecords();
  for (v1::RequestRecord& r : records) r.set_cached_tokens(-1);
  absl::StatusOr<v1::Result> none = Analyze(records, GoldenSpec());
  ASSERT_THAT(none, IsOk());
  EXPECT_FALSE(none->cached_tokens_reported());
  EXPECT_EQ(none->prefix_cache_hit_ratio(), 0);
  EXPECT_THAT(FormatResult(*none), HasSubstr("not reported"));

  records[3].set_cached_tokens(5);  // R1 only.
  absl::StatusOr<v1::Result> one = Analyze(records, GoldenSpec());
  ASSERT_THAT(one, IsOk());
  EXPECT_TRUE(one->cached_tokens_reported());
  EXPECT_NEAR(one->prefix_cache_hit_ratio(), 5.0 / 30, kEps);
}

// Behind vLLM's toy proxy the client sees decode's usage, whose cached
// tokens are the KV it loaded from prefill: flagged, and said in the report.
TEST(AnalyzeTest, DecodesCachedTokensBehindVllmsProxyAreFlagged) {
  absl::StatusOr<v1::Result> sim = Analyze(GoldenRecords(), GoldenSpec());
  ASSERT_THAT(sim, IsOk());
  EXPECT_FALSE(sim->cached_tokens_from_decode());
  for (v1::Engine engine : {v1::ENGINE_VLLM_ASCEND, v1::ENGINE_SGLANG}) {
    v1::ExperimentSpec spec = GoldenSpec();
    spec.mutable_deployment()->set_engine(engine);
    absl::StatusOr<v1::Result> r = Analyze(GoldenRecords(), spec);
    ASSERT_THAT(r, IsOk());
    EXPECT_FALSE(r->cached_tokens_from_decode()) << v1::Engine_Name(engine);
  }
  v1::ExperimentSpec vllm = GoldenSpec();
  vllm.mutable_deployment()->set_engine(v1::ENGINE_VLLM);
  absl::StatusOr<v1::Result> r = Analyze(GoldenRecords(), vllm);
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->cached_tokens_from_decode());
  EXPECT_THAT(FormatResult(*r), HasSubstr("decode's count"));
}

TEST(AnalyzeTest, SteadyFractionLowersThreshold) {
  v1::ExperimentSpec spec = GoldenSpec();
  spec.mutable_analysis()->set_steady_min_inflight_fraction(0.5);  // T = 1.
  absl::StatusOr<v1::Result> r = Analyze(GoldenRecords(), spec);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->steady().steady_min_inflight(), 1);
  EXPECT_NEAR(r->steady().start_seconds(), 0.001, kEps);
  EXPECT_NEAR(r->steady().end_seconds(), 0.081, kEps);
  EXPECT_EQ(r->steady().requests_completed(), 3);
}

TEST(AnalyzeTest, SteadyNeverReachedIsEmptyAndLabeled) {
  v1::ExperimentSpec spec = GoldenSpec();
  spec.mutable_workload()->set_concurrency(3);
  absl::StatusOr<v1::Result> r = Analyze(GoldenRecords(), spec);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->steady().name(), "steady");
  EXPECT_EQ(r->steady().duration_seconds(), 0);
  EXPECT_EQ(r->steady().requests_completed(), 0);
  EXPECT_EQ(r->whole().requests_completed(), 3);
}

TEST(AnalyzeTest, CardsFromSpecAndChunkMismatch) {
  v1::ExperimentSpec spec = GoldenSpec();
  spec.mutable_analysis()->set_device_count(16);
  std::vector<v1::RequestRecord> rs = {Rec(v1::PHASE_WARMUP, 0, 0, 0, 0, {10, 20}, 20, 10, 3, 0)};
  absl::StatusOr<v1::Result> r = Analyze(rs, spec);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->device_count(), 16);
  EXPECT_EQ(r->analyzed_phase(), v1::PHASE_UNSPECIFIED);  // No formal records: all of them.
  EXPECT_EQ(r->exactness().chunk_count_mismatch(), 1);    // 2 chunks, usage says 3.
  EXPECT_NEAR(r->whole().output_tokens_per_second_per_device(), 3 / 0.020 / 16, kEps);
}

TEST(AnalyzeTest, RejectsEmptyRecordsAndBadSpec) {
  EXPECT_THAT(Analyze({}, GoldenSpec()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no request records")));
  v1::ExperimentSpec spec = GoldenSpec();
  spec.mutable_analysis()->set_steady_min_inflight_fraction(1.5);
  EXPECT_THAT(Analyze(GoldenRecords(), spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("analysis.steady_min_inflight_fraction")));
  spec = GoldenSpec();
  spec.mutable_analysis()->add_percentiles(0);
  EXPECT_THAT(Analyze(GoldenRecords(), spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("analysis.percentiles")));
}

TEST(AnalyzeTest, IsAPureFunctionOfItsInputs) {
  absl::StatusOr<v1::Result> a = Analyze(GoldenRecords(), GoldenSpec());
  absl::StatusOr<v1::Result> b = Analyze(GoldenRecords(), GoldenSpec());
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(a->SerializeAsString(), b->SerializeAsString());
}

}  // namespace
}  // namespace servelab::analysis
