#include "daemon/core/stage_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "daemon/core/control_plane.h"
#include "daemon/core/planner.h"
#include "daemon/core/stages.h"
#include "daemon/core/testing/fake_store.h"
#include "google/protobuf/util/time_util.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::core {
namespace {

using servelab::testing::IsOk;
using servelab::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::AllOf;

// Serving instances that exist only as counters; a formal request moves
// prefill prompt tokens and decode generation tokens like a real P/D pair.
class FakeEngine : public Engine {
 public:
  absl::StatusOr<LaunchCommand> Render(const v1::ExperimentSpec& spec, v1::Side side,
                                       const Endpoints&, const std::string&) override {
    return LaunchCommand{.side = side, .argv = {binary}, .port = 0};
  }
  absl::StatusOr<v1::ServingInstance> Launch(const LaunchCommand& command) override {
    absl::MutexLock lock(&mu);
    v1::ServingInstance instance;
    instance.set_side(command.side);
    instance.set_pid(next_pid++);
    instance.set_port(9000 + instance.pid());
    alive.insert(instance.pid());
    launches[command.side]++;
    return instance;
  }
  absl::Status WaitReady(const v1::ServingInstance&, absl::Time) override { return absl::OkStatus(); }
  bool Alive(const v1::ServingInstance& instance) override {
    absl::MutexLock lock(&mu);
    return alive.count(instance.pid()) > 0;
  }
  absl::Status Stop(const v1::ServingInstance& instance, absl::Duration) override {
    absl::MutexLock lock(&mu);
    alive.erase(instance.pid());
    return absl::OkStatus();
  }
  absl::StatusOr<InstanceCounters> Scrape(const v1::ServingInstance& instance) override {
    absl::MutexLock lock(&mu);
    return counters[instance.side()];
  }
  // Like vLLM: answers OK, but does nothing while `refuse_resets` > 0 (blocks
  // held elsewhere); `busy_resets` > 0 answers UNAVAILABLE like SGLang's 400.
  absl::Status ResetPrefixCache(const v1::ServingInstance& instance) override {
    absl::MutexLock lock(&mu);
    ++reset_calls[instance.side()];
    if (busy_resets[instance.side()] > 0) {
      --busy_resets[instance.side()];
      return absl::UnavailableError("flush_cache answered 400: requests still running");
    }
    if (refuse_resets[instance.side()] > 0) {
      --refuse_resets[instance.side()];
      return absl::OkStatus();
    }
    probe_cached.erase(instance.side());
    return absl::OkStatus();
  }
  bool ResetNeedsConfirmation(const v1::ServingInstance&) override { return true; }
  // A probe of 32 tokens: all of them hit when it was cached before.
  absl::Status SendProbeRequest(const v1::ServingInstance& instance, const std::string&) override {
    absl::MutexLock lock(&mu);
    InstanceCounters& c = counters[instance.side()];
    c.prefix_cache_queries += 32;
    if (probe_cached.count(instance.side()) > 0) c.prefix_cache_hits += 32;
    probe_cached.insert(instance.side());
    ++probes;
    return absl::OkStatus();
  }
  std::string BaseUrl(const v1::ServingInstance& instance) override {
    return "http://127.0.0.1:" + std::to_string(instance.port());
  }

  absl::Mutex mu;
  std::string binary = "/bin/true";
  int next_pid = 100;
  std::set<int> alive;
  std::map<v1::Side, int> launches;
  std::map<v1::Side, InstanceCounters> counters;
  std::set<v1::Side> probe_cached;
  // A router that serves the decode leg itself: tokens move, D's own
  // request counter does not.
  bool decode_drops_requests = false;
  // Per side: the two sides reset at the same time.
  std::map<v1::Side, int> refuse_resets;
  std::map<v1::Side, int> busy_resets;
  std::map<v1::Side, int> reset_calls;
  int probes = 0;
};

class FakeLoad : public LoadDriver {
 public:
  explicit FakeLoad(FakeEngine& engine) : engine_(engine) {}

  absl::StatusOr<LoadPlanSummary> Plan(const LoadJob& job) override {
    return LoadPlanSummary{.requests = Count(job)};
  }
  absl::StatusOr<LoadOutcome> Run(
      const LoadJob& job,
      const std::function<absl::Status(const std::vector<v1::RequestRecord>&)>& on_records,
      const std::function<void(const LoadTick&)>& on_tick, std::atomic<bool>&) override {
    const int64_t n = Count(job);
    std::vector<v1::RequestRecord> records;
    const auto start = google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(absl::Now()));
    const int out = job.spec->workload().dataset().output_tokens();
    for (int i = 0; i < n; ++i) {
      v1::RequestRecord& r = records.emplace_back();
      r.set_experiment_id(job.experiment_id);
      r.set_phase(job.phase);
      r.set_attempt(job.attempt);
      r.set_index(i);
      r.set_sent_ns(1'000'000 + i * 1'000'000);
      r.set_first_token_ns(r.sent_ns() + 2'000'000);
      for (int k = 0; k < out; ++k) r.add_chunk_ns(r.first_token_ns() + k * 1'000'000);
      r.set_end_ns(r.first_token_ns() + out * 1'000'000);
      r.set_prompt_tokens(100);
      r.set_completion_tokens(out);
      r.set_http_status(200);
      *r.mutable_load_start() = start;
    }
    {
      absl::MutexLock lock(&engine_.mu);
      engine_.counters[v1::SIDE_PREFILL].prompt_tokens += 100 * n;
      engine_.counters[v1::SIDE_PREFILL].request_success += n;
      engine_.counters[v1::SIDE_DECODE].generation_tokens += out * n;
      engine_.counters[v1::SIDE_DECODE].request_success += engine_.decode_drops_requests ? 0 : n;
    }
    {
      absl::MutexLock lock(&mu);
      sent[job.phase] += n;
      tags.push_back(job.load_tag);
    }
    if (absl::Status s = on_records(records); !s.ok()) return s;
    on_tick(LoadTick{n, n, 0});
    return LoadOutcome{.planned = n, .sent = n, .completed = n, .wall = absl::Milliseconds(10),
                       .summed_latency = absl::Milliseconds(10 * n), .all_ended = true};
  }

  int64_t SentIn(v1::Phase phase) {
    absl::MutexLock lock(&mu);
    return sent[phase];
  }

 private:
  int64_t Count(const LoadJob& job) {
    const v1::ExperimentSpec& spec = *job.spec;
    switch (job.phase) {
      case v1::PHASE_FORMAL: return spec.workload().num_requests();
      case v1::PHASE_WARMUP: return spec.deployment().warmup().requests();
      case v1::PHASE_CACHE_SEED: return spec.workload().dataset().prefix_groups();
      default: return 1;
    }
  }

  FakeEngine& engine_;
  absl::Mutex mu;
  std::map<v1::Phase, int64_t> sent;
  std::vector<std::string> tags;
};

class StageRunnerTest : public ::testing::Test {
 protected:
  // Tests start the runner themselves, so they can arrange things first.
  void SetUp() override { plane_.SetExecutor(&runner_); }
  void TearDown() override { runner_.Shutdown(); }

  v1::Experiment Submit(const std::string& base, const std::vector<std::string>& sets) {
    v1::SubmitExperimentRequest request;
    if (base.empty()) {
      request.set_spec_text(R"(
scenario: s
deployment:
  prefill: {devices: [0]}
  decode: {devices: [1]}
  warmup: {rounds: 2, requests: 3}
workload:
  dataset: {input_tokens: 100, output_tokens: 4, prefix_cache_ratio: 0.5, prefix_groups: 2}
  num_requests: 20
  concurrency: 4
)");
    } else {
      request.set_base_id(base);
    }
    for (const std::string& s : sets) request.add_set(s);
    absl::StatusOr<v1::Experiment> e = plane_.Submit(request);
    EXPECT_THAT(e, IsOk());
    return *e;
  }

  v1::Experiment WaitFinal(const std::string& id) {
    v1::Experiment e;
    EXPECT_TRUE(servelab::testing::WaitFor(
        [&] {
          e = *plane_.Get(id);
          return IsFinal(e.state());
        },
        absl::Seconds(20)))
        << e.DebugString();
    return e;
  }

  static const v1::Stage& StageOf(const v1::Experiment& e, v1::StageName name) {
    for (const v1::Stage& s : e.stages()) {
      if (s.name() == name) return s;
    }
    return v1::Stage::default_instance();
  }

  testing::FakeStore store_;
  RealClock clock_;
  ControlPlane plane_{store_, clock_};
  FakeEngine engine_;
  FakeLoad load_{engine_};
  NullRunnerMetrics metrics_;
  StageRunner runner_{plane_.ledger(), engine_, load_, metrics_,
                      StageRunner::Options{.log_dir = "/tmp", .drain_poll = absl::Milliseconds(1)}};
};

TEST_F(StageRunnerTest, BaseExperimentRunsEveryStage) {
  runner_.Start();
  v1::Experiment e = WaitFinal(Submit("", {}).id());
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  for (const v1::Stage& s : e.stages()) {
    EXPECT_EQ(s.status(), v1::STAGE_STATUS_SUCCEEDED) << StageLabel(s.name()) << " " << s.error();
    EXPECT_TRUE(s.has_started_at() && s.has_ended_at()) << StageLabel(s.name());
  }
  EXPECT_EQ(engine_.launches[v1::SIDE_PREFILL], 1);
  EXPECT_EQ(engine_.launches[v1::SIDE_ROUTER], 1);
  EXPECT_EQ(load_.SentIn(v1::PHASE_WARMUP), 6);
  EXPECT_EQ(load_.SentIn(v1::PHASE_CACHE_SEED), 2);
  EXPECT_EQ(e.progress().formal_requests_sent(), 20);
  EXPECT_TRUE(e.progress().has_first_formal_request_at());
  EXPECT_EQ(e.result().whole().requests_completed(), 20);
  EXPECT_EQ(StageOf(e, v1::STAGE_CACHE_SEED).counters().at("requests"), 2);
  EXPECT_EQ(StageOf(e, v1::STAGE_CACHE_SEED).counters().at("summed_request_latency_seconds"), 0.02);
  absl::StatusOr<v1::Summary> summary = plane_.Summary();
  ASSERT_THAT(summary, IsOk());
  EXPECT_EQ(summary->lane_owner(), "");
  EXPECT_EQ(summary->hot_deployment().experiment_id(), e.id());
  EXPECT_THAT(summary->hot_deployment().cache_state(), HasSubstr(e.id() + "'s formal load"));
}

TEST_F(StageRunnerTest, ConcurrencyDeltaReusesLaunchWarmupAndRoute) {
  runner_.Start();
  v1::Experiment base = WaitFinal(Submit("", {}).id());
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED);
  const int64_t warmups = load_.SentIn(v1::PHASE_WARMUP);
  v1::Experiment e = WaitFinal(Submit(base.id(), {"workload.concurrency=8"}).id());
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  for (v1::StageName s : {v1::STAGE_LAUNCH_PREFILL, v1::STAGE_LAUNCH_DECODE,
                          v1::STAGE_LAUNCH_ROUTER, v1::STAGE_WARMUP, v1::STAGE_ROUTE_VERIFY}) {
    EXPECT_EQ(StageOf(e, s).status(), v1::STAGE_STATUS_REUSED) << StageLabel(s);
  }
  EXPECT_EQ(StageOf(e, v1::STAGE_FORMAL_LOAD).status(), v1::STAGE_STATUS_SUCCEEDED);
  EXPECT_EQ(engine_.launches[v1::SIDE_DECODE], 1);
  EXPECT_EQ(load_.SentIn(v1::PHASE_WARMUP), warmups);
  EXPECT_TRUE(e.progress().has_first_formal_request_delay());
  EXPECT_EQ(e.result().decision().baseline_experiment_id(), base.id());
}

TEST_F(StageRunnerTest, DecodeDeltaRelaunchesDecodeOnly) {
  runner_.Start();
  v1::Experiment base = WaitFinal(Submit("", {}).id());
  v1::Experiment e = WaitFinal(Submit(base.id(), {"deployment.decode.max_num_seqs=64"}).id());
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  EXPECT_EQ(StageOf(e, v1::STAGE_LAUNCH_PREFILL).status(), v1::STAGE_STATUS_REUSED);
  EXPECT_EQ(StageOf(e, v1::STAGE_LAUNCH_DECODE).status(), v1::STAGE_STATUS_SUCCEEDED);
  EXPECT_EQ(engine_.launches[v1::SIDE_PREFILL], 1);
  EXPECT_EQ(engine_.launches[v1::SIDE_DECODE], 2);
}

TEST_F(StageRunnerTest, AnalysisFailureResumesWithoutSendingRequests) {
  runner_.Start();
  v1::Experiment e =
      WaitFinal(Submit("", {"analysis.decision.metric=output_tokens_per_second_per_crad"}).id());
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::ANALYSIS_FAILED);
  EXPECT_THAT(e.resume_action(), HasSubstr("no request is sent"));
  const int64_t formal = load_.SentIn(v1::PHASE_FORMAL);
  v1::ResumeExperimentRequest resume;
  resume.set_id(e.id());
  resume.add_set("analysis.decision.metric=output_tokens_per_second");
  ASSERT_THAT(plane_.Resume(resume), IsOk());
  e = WaitFinal(e.id());
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  EXPECT_EQ(load_.SentIn(v1::PHASE_FORMAL), formal);
  EXPECT_EQ(StageOf(e, v1::STAGE_FORMAL_LOAD).attempt(), 1);
}

TEST_F(StageRunnerTest, PreflightFailureLaunchesNothing) {
  runner_.Start();
  engine_.binary = "/nonexistent/servelab-sim";
  v1::Experiment e = WaitFinal(Submit("", {}).id());
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::NO_REQUESTS_SENT);
  EXPECT_THAT(e.blocker(), HasSubstr("not an executable"));
  EXPECT_TRUE(engine_.launches.empty());
  EXPECT_EQ(load_.SentIn(v1::PHASE_WARMUP), 0);
}

TEST_F(StageRunnerTest, QueuedExperimentsRunInOrderOnOneLane) {
  runner_.Start();
  v1::Experiment a = Submit("", {});
  v1::Experiment b = Submit(a.id(), {"workload.concurrency=2"});
  a = WaitFinal(a.id());
  b = WaitFinal(b.id());
  ASSERT_EQ(b.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << b.blocker();
  // b's formal load started after a's drain was confirmed.
  EXPECT_GE(google::protobuf::util::TimeUtil::TimestampToNanoseconds(
                StageOf(b, v1::STAGE_FORMAL_LOAD).started_at()),
            google::protobuf::util::TimeUtil::TimestampToNanoseconds(
                StageOf(a, v1::STAGE_DRAIN_CONFIRM).ended_at()));
}

TEST_F(StageRunnerTest, LayoutChangedAfterFreezeFailsPreflightBeforeAnyLaunch) {
  servelab::testing::TempDir dir;
  servelab::testing::WriteFile(dir.File("layout.json"), "{\"placement\": \"a\"}");
  v1::Experiment e = Submit("", {"deployment.decode.expert_layout=" + dir.File("layout.json")});
  servelab::testing::WriteFile(dir.File("layout.json"), "{\"placement\": \"b\"}");
  runner_.Start();
  e = WaitFinal(e.id());
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::NO_REQUESTS_SENT);
  EXPECT_THAT(e.blocker(), HasSubstr("deployment.decode.expert_layout.sha256"));
  EXPECT_EQ(StageOf(e, v1::STAGE_PREFLIGHT).status(), v1::STAGE_STATUS_FAILED);
  EXPECT_TRUE(engine_.launches.empty());
}

TEST_F(StageRunnerTest, RecoveryClassifiesAnInterruptedFormalLoad) {
  v1::Experiment e = Submit("", {});
  // As the store looks after a crash in the middle of the formal load.
  for (v1::Stage& stage : *e.mutable_stages()) {
    if (stage.name() < v1::STAGE_FORMAL_LOAD) stage.set_status(v1::STAGE_STATUS_SUCCEEDED);
    if (stage.name() == v1::STAGE_FORMAL_LOAD) stage.set_status(v1::STAGE_STATUS_RUNNING);
  }
  e.set_state(v1::EXPERIMENT_STATE_RUNNING);
  ASSERT_THAT(store_.UpdateExperiment(e, Event{.kind = "state"}), IsOk());
  ASSERT_THAT(runner_.Recover(), IsOk());
  e = *plane_.Get(e.id());
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::LOAD_INTERRUPTED);
  EXPECT_EQ(StageOf(e, v1::STAGE_FORMAL_LOAD).status(), v1::STAGE_STATUS_FAILED);
  EXPECT_EQ(load_.SentIn(v1::PHASE_FORMAL), 0);  // Never re-sent by itself.
}

// Stage bodies called directly on a deployment of fake instances.
class StageBodyTest : public StageRunnerTest {
 protected:
  void SetUp() override {
    StageRunnerTest::SetUp();
    for (v1::Side side : {v1::SIDE_PREFILL, v1::SIDE_DECODE, v1::SIDE_ROUTER}) {
      v1::ServingInstance instance;
      instance.set_side(side);
      instance.set_pid(static_cast<int>(side));
      ASSERT_THAT(store_.PutInstance(instance), IsOk());
    }
    e_ = Submit("", {"limits.warmup_timeout=300ms", "limits.drain_timeout=100ms"});
  }

  StageEnv Env() {
    return StageEnv{store_, engine_, load_, metrics_, clock_, "/tmp", cancel_,
                    absl::Milliseconds(10), absl::Milliseconds(1)};
  }

  std::atomic<bool> cancel_{false};
  v1::Experiment e_;
};

TEST_F(StageBodyTest, RouteVerifyNeedsBothSidesOwnRequestCounters) {
  StageEnv env = Env();
  absl::StatusOr<Counters> ok = RouteVerify(env, e_);
  ASSERT_THAT(ok, IsOk());
  EXPECT_EQ(ok->at("prefill_requests_delta"), 1);
  EXPECT_EQ(ok->at("decode_requests_delta"), 1);
  // Tokens moved on both sides, but D never counted a request of its own.
  engine_.decode_drops_requests = true;
  EXPECT_THAT(RouteVerify(env, e_), StatusIs(absl::StatusCode::kFailedPrecondition,
                                             HasSubstr("decode by 0 requests")));
}

TEST_F(StageBodyTest, CacheResetIsConfirmedByAProbeThatNoLongerHits) {
  StageEnv env = Env();
  engine_.refuse_resets[v1::SIDE_PREFILL] = 2;  // Answered OK twice, did nothing.
  absl::StatusOr<Counters> c = CacheReset(env, e_);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->at("prefill_reset_attempts"), 3);
  EXPECT_EQ(c->at("decode_reset_attempts"), 1);
  // One probe to cache the prompt, then one after every reset that answered OK.
  EXPECT_EQ(c->at("prefill_probe_requests"), 4);
  EXPECT_EQ(c->at("decode_probe_requests"), 2);
}

TEST_F(StageBodyTest, CacheResetRetriesWhileTheEngineIsBusy) {
  StageEnv env = Env();
  engine_.busy_resets[v1::SIDE_PREFILL] = 3;  // SGLang's /flush_cache answering 400.
  absl::StatusOr<Counters> c = CacheReset(env, e_);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->at("prefill_reset_attempts"), 4);
}

TEST_F(StageBodyTest, CacheResetNeverConfirmedFailsAtTheDeadline) {
  StageEnv env = Env();
  engine_.refuse_resets[v1::SIDE_PREFILL] = 1 << 30;
  EXPECT_THAT(CacheReset(env, e_),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       AllOf(HasSubstr("prefill prefix cache not reset"),
                             HasSubstr("still hit 32 tokens"))));
}

TEST_F(StageBodyTest, CacheResetWaitsForKvBlocksToBeReleased) {
  StageEnv env = Env();
  {
    absl::MutexLock lock(&engine_.mu);
    engine_.counters[v1::SIDE_PREFILL].kv_cache_usage = 0.25;  // A NIXL lease.
  }
  EXPECT_THAT(CacheReset(env, e_), StatusIs(absl::StatusCode::kDeadlineExceeded,
                                            HasSubstr("KV usage 0.25")));
  EXPECT_EQ(engine_.reset_calls[v1::SIDE_PREFILL], 0);  // Never reset while leased.
  std::thread release([&] {
    absl::SleepFor(absl::Milliseconds(50));
    absl::MutexLock lock(&engine_.mu);
    engine_.counters[v1::SIDE_PREFILL].kv_cache_usage = 0;
  });
  EXPECT_THAT(CacheReset(env, e_), IsOk());
  release.join();
}

TEST_F(StageBodyTest, DrainCountsRequestsBetweenThePdQueues) {
  StageEnv env = Env();
  {
    absl::MutexLock lock(&engine_.mu);
    // Neither running nor waiting, but still in SGLang's transfer queue.
    engine_.counters[v1::SIDE_DECODE].requests_in_transfer = 2;
  }
  EXPECT_THAT(DrainConfirm(env, e_), StatusIs(absl::StatusCode::kFailedPrecondition,
                                              HasSubstr("2 in transfer")));
  {
    absl::MutexLock lock(&engine_.mu);
    engine_.counters[v1::SIDE_DECODE].requests_in_transfer = 0;
  }
  EXPECT_THAT(DrainConfirm(env, e_), IsOk());
}

}  // namespace
}  // namespace servelab::core
