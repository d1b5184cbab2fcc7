#include "sim/instance_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "tests/testing/status_matchers.h"

namespace servelab::sim {
namespace {

using ::servelab::testing::IsOk;
using ::testing::HasSubstr;

GenerationRequest Request(int64_t prompt_len, int64_t max_tokens) {
  GenerationRequest r;
  for (int64_t i = 0; i < prompt_len; ++i) r.prompt_tokens.push_back(i);
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  return r;
}

TEST(InstanceModelTest, AdmitsUpToMaxNumSeqsThenQueuesInOrder) {
  SimConfig c;
  c.max_num_seqs = 1;
  InstanceModel instance(c, Role::kUnified, 1, 1.0);
  auto a = instance.Arrive(Request(4, 2), {});
  auto b = instance.Arrive(Request(4, 2), {});
  bool woke = false;
  EXPECT_TRUE(instance.TryAdmit(*a, [] {}));
  EXPECT_FALSE(instance.TryAdmit(*b, [&] { woke = true; }));
  EXPECT_THAT(instance.RenderMetrics(),
              HasSubstr("vllm:num_requests_waiting{model_name=\"servelab-sim\",engine=\"0\"} 1"));
  instance.Finish(*a, Outcome::kSuccess, 200);
  EXPECT_TRUE(woke);
  EXPECT_TRUE(b->admitted);
  instance.Finish(*b, Outcome::kSuccess, 200);
  EXPECT_THAT(instance.RenderMetrics(),
              HasSubstr("vllm:request_success_total{model_name=\"servelab-sim\",engine=\"0\","
                        "finished_reason=\"length\"} 2"));
}

TEST(InstanceModelTest, RemoteDecodeLeaseHoldsBlocksAndBlocksTheReset) {
  SimConfig c;
  c.num_gpu_blocks = 4;
  c.block_size = 4;
  c.kv_lease_seconds = 3600;  // never ends within the test
  InstanceModel instance(c, Role::kPrefill, 1, 1.0, CompatOptions{Compat::kVllm});
  GenerationRequest q = Request(8, 1);  // 9 tokens: 3 of the 4 blocks
  q.remote_decode = true;
  auto a = instance.Arrive(q, {});
  ASSERT_TRUE(instance.TryAdmit(*a, [] {}));
  EXPECT_EQ(instance.Finish(*a, Outcome::kSuccess, 200), std::chrono::seconds(3600));
  EXPECT_THAT(instance.RenderMetrics(),
              HasSubstr("vllm:kv_cache_usage_perc{model_name=\"servelab-sim\",engine=\"0\"} 0.75"));
  EXPECT_FALSE(instance.ResetPrefixCache());
  // The leased blocks count for admission: this one must wait.
  auto b = instance.Arrive(Request(8, 1), {});
  EXPECT_FALSE(instance.TryAdmit(*b, [] {}));
  instance.ExpireLeases();  // not expired yet: still waiting
  EXPECT_FALSE(b->admitted);
  instance.Finish(*b, Outcome::kAborted, 0);
  // Without remote decode (or in the sim profile) there is no lease.
  auto u = instance.Arrive(Request(1, 1), {});
  ASSERT_TRUE(instance.TryAdmit(*u, [] {}));  // 1 block: fits beside the lease
  EXPECT_EQ(instance.Finish(*u, Outcome::kSuccess, 200), std::chrono::nanoseconds(0));
  InstanceModel sim(c, Role::kPrefill, 1, 1.0);
  auto s = sim.Arrive(q, {});
  ASSERT_TRUE(sim.TryAdmit(*s, [] {}));
  EXPECT_GT(sim.Finish(*s, Outcome::kSuccess, 200).count(), 0);  // config sets it explicitly
  EXPECT_TRUE(sim.ResetPrefixCache());                           // the sim profile always resets
}

TEST(InstanceModelTest, RepeatedPromptHitsPrefixCacheUntilReset) {
  SimConfig c;
  c.block_size = 4;
  c.cold_start_requests = 0;
  InstanceModel instance(c, Role::kUnified, 1, 1.0);
  auto run = [&] {
    auto r = instance.Arrive(Request(20, 1), {});
    EXPECT_TRUE(instance.TryAdmit(*r, [] {}));
    std::chrono::nanoseconds d = instance.StartPrefill(*r);
    instance.EndPrefill(*r);
    instance.Finish(*r, Outcome::kSuccess, 200);
    return std::make_pair(r->cached_tokens, d);
  };
  auto [cold_hit, cold_time] = run();
  auto [warm_hit, warm_time] = run();
  EXPECT_EQ(cold_hit, 0);
  EXPECT_EQ(warm_hit, 16);
  EXPECT_LT(warm_time, cold_time);
  instance.ResetPrefixCache();
  EXPECT_EQ(run().first, 0);
  EXPECT_THAT(
      instance.RenderMetrics(),
      HasSubstr("vllm:prefix_cache_hits_total{model_name=\"servelab-sim\",engine=\"0\"} 16"));
}

TEST(InstanceModelTest, ColdStartPenaltyOnlyForTheFirstRequests) {
  SimConfig c;
  c.cold_start_requests = 1;
  c.cold_start_penalty_seconds = 1.0;
  c.enable_prefix_caching = false;
  InstanceModel instance(c, Role::kUnified, 1, 1.0);
  auto first = instance.Arrive(Request(8, 1), {});
  auto second = instance.Arrive(Request(8, 1), {});
  instance.TryAdmit(*first, [] {});
  instance.TryAdmit(*second, [] {});
  std::chrono::nanoseconds d1 = instance.StartPrefill(*first);
  instance.EndPrefill(*first);
  std::chrono::nanoseconds d2 = instance.StartPrefill(*second);
  EXPECT_NEAR(std::chrono::duration<double>(d1 - d2).count(), 1.0, 1e-6);
}

TEST(InstanceModelTest, TimeScaleMultipliesDurations) {
  SimConfig c;
  InstanceModel full(c, Role::kUnified, 1, 1.0), tenth(c, Role::kUnified, 1, 0.1);
  EXPECT_EQ(full.Scaled(2.0).count(), 2000000000);
  EXPECT_EQ(tenth.Scaled(2.0).count(), 200000000);
}

TEST(InstanceModelTest, SameSeedSameDecisions) {
  SimConfig c;
  c.jitter = 0.5;
  c.eos_probability = 0.1;
  c.faults.error_fraction = 0.3;
  auto trace = [&](uint64_t seed) {
    InstanceModel instance(c, Role::kUnified, seed, 1.0);
    std::vector<std::tuple<double, int64_t, int>> out;
    for (int i = 0; i < 50; ++i) {
      GenerationRequest q = Request(4, 50);
      q.ignore_eos = false;
      auto r = instance.Arrive(std::move(q), {});
      out.emplace_back(r->jitter, r->output_tokens, static_cast<int>(r->fault));
      instance.Finish(*r, Outcome::kError, 503);
    }
    return out;
  };
  EXPECT_EQ(trace(7), trace(7));
  EXPECT_NE(trace(7), trace(8));
}

TEST(InstanceModelTest, FaultsAppliedInOrderAndCounted) {
  SimConfig c;
  InstanceModel instance(c, Role::kUnified, 1, 1.0);
  absl::StatusOr<JsonValue> body =
      ParseJson(R"({"error_next": 1, "hang_next": 1, "drop_next": 1})");
  ASSERT_THAT(instance.ApplyFaults(*body), IsOk());
  EXPECT_EQ(instance.Arrive(Request(2, 1), {})->fault, FaultAction::kError);
  EXPECT_EQ(instance.Arrive(Request(2, 1), {})->fault, FaultAction::kHang);
  EXPECT_EQ(instance.Arrive(Request(2, 1), {})->fault, FaultAction::kDrop);
  EXPECT_EQ(instance.Arrive(Request(2, 1), {})->fault, FaultAction::kNone);
  EXPECT_FALSE(instance.ApplyFaults(*ParseJson(R"({"nope": 1})")).ok());
}

// One decode step of `instance` with `running` sequences.
std::chrono::nanoseconds Step(const InstanceModel& instance, int64_t running) {
  const SimConfig& c = instance.config();
  return instance.Scaled(c.decode_base_seconds +
                         c.decode_seconds_per_seq * static_cast<double>(running));
}

// An instance whose decode steps the tests read; Admit(n) makes n requests
// run, which sizes the steps.
class DecodeStepsTest : public ::testing::Test {
 protected:
  void Admit(int n) {
    for (int i = 0; i < n; ++i) {
      running_.push_back(instance_.Arrive(Request(2, 8), {}));
      ASSERT_TRUE(instance_.TryAdmit(*running_.back(), [] {}));
    }
  }

  SimConfig config_;
  InstanceModel instance_{config_, Role::kUnified, 1, 1.0};
  std::vector<std::unique_ptr<RequestState>> running_;
};

TEST_F(DecodeStepsTest, TokensOfOneDecodeStepFallDueTogether) {
  Admit(2);
  const SteadyClock::time_point t0 = SteadyClock::now();
  // The idle engine starts a step with a's token; b's token was due at the
  // same time, so it is in that step too.
  const SteadyClock::time_point first = instance_.NextTokenDue(t0);
  EXPECT_EQ(first - t0, Step(instance_, 2));
  EXPECT_EQ(instance_.NextTokenDue(t0), first);
  // Both asking again at that step's end: the next step, back to back.
  const SteadyClock::time_point second = instance_.NextTokenDue(first);
  EXPECT_EQ(second - first, Step(instance_, 2));
  EXPECT_EQ(instance_.NextTokenDue(first), second);
  // A request two steps behind the engine (resumed late) is in each step it
  // missed, not only the latest: its overdue tokens go out together.
  const SteadyClock::time_point third = instance_.NextTokenDue(second);
  EXPECT_EQ(instance_.NextTokenDue(first), second);
  EXPECT_EQ(instance_.NextTokenDue(second), third);
  EXPECT_EQ(third - second, Step(instance_, 2));
}

TEST_F(DecodeStepsTest, AFirstTokenMidStepJoinsTheNextStep) {
  Admit(1);
  const SteadyClock::time_point t0 = SteadyClock::now();
  const SteadyClock::time_point step_end = instance_.NextTokenDue(t0);
  // A prefill that ended halfway through the step: its request waits for
  // the step to end and is in the one after.
  const SteadyClock::time_point mid = t0 + Step(instance_, 1) / 2;
  EXPECT_EQ(instance_.NextTokenDue(mid), step_end + Step(instance_, 1));
  // Alone, after a pause: the idle engine starts a step with it, off the
  // old steps' phase.
  const SteadyClock::time_point later = step_end + std::chrono::milliseconds(500) / 3;
  EXPECT_EQ(instance_.NextTokenDue(later), later + Step(instance_, 1));
}

TEST_F(DecodeStepsTest, StepsGoOnBackToBackWhileOthersRun) {
  Admit(2);
  const std::chrono::nanoseconds step = Step(instance_, 2);
  const SteadyClock::time_point t0 = SteadyClock::now();
  const SteadyClock::time_point first = instance_.NextTokenDue(t0);
  // b's first token came a third of a step after the step ended, before a
  // (resumed late) asked again: the engine was busy, so the step in progress
  // started at `first`, and b is in the one after.
  EXPECT_EQ(instance_.NextTokenDue(first + step / 3), first + 2 * step);
  // a, late, still gets the step that started at `first`.
  EXPECT_EQ(instance_.NextTokenDue(first), first + step);
  // Two and a half steps on, the phase holds.
  EXPECT_EQ(instance_.NextTokenDue(first + step * 5 / 2), first + 4 * step);
}

TEST(InstanceModelTest, ArrivalIsWhenTheRequestWasReceived) {
  SimConfig c;
  InstanceModel instance(c, Role::kUnified, 1, 1.0);
  const SteadyClock::time_point received = SteadyClock::now() - std::chrono::milliseconds(200);
  const double unix_now = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  auto r = instance.Arrive(Request(2, 1), RequestMeta{"r1", "", received});
  EXPECT_EQ(r->arrival, received);
  EXPECT_NEAR(r->arrival_unix, unix_now - 0.2, 0.05);
  instance.OnToken(*r);
  EXPECT_GE(r->ttft_seconds, 0.2);
  auto unstamped = instance.Arrive(Request(2, 1), {});
  EXPECT_NEAR(unstamped->arrival_unix, unix_now, 0.05);
  EXPECT_LE(SteadyClock::now() - unstamped->arrival, std::chrono::milliseconds(50));
}

TEST(InstanceModelTest, OverlapWitnessPerLoadTag) {
  SimConfig c;
  InstanceModel instance(c, Role::kUnified, 1, 1.0);
  auto a = instance.Arrive(Request(2, 1), RequestMeta{"r1", "load-a"});
  EXPECT_THAT(instance.LoadsJson(), HasSubstr("\"in_flight\":1"));
  instance.Finish(*a, Outcome::kSuccess, 200);
  EXPECT_THAT(instance.LoadsJson(), HasSubstr("\"load-a\""));
  EXPECT_THAT(instance.LoadsJson(), HasSubstr("\"completed\":1,\"in_flight\":0"));
  EXPECT_THAT(instance.DebugRequestsJson(), HasSubstr("\"request_id\":\"r1\""));
}

}  // namespace
}  // namespace servelab::sim
