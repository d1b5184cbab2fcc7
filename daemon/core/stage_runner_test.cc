#include "daemon/core/stage_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "absl/strings/match.h"
#include "common/labels.h"
#include "daemon/core/control_plane.h"
#include "daemon/core/planner.h"
#include "daemon/core/stages.h"
#include "daemon/core/testing/failing_store.h"
#include "daemon/core/testing/fake_clock.h"
#include "daemon/core/testing/fake_store.h"
#include "google/protobuf/util/time_util.h"
#include "tests/testing/sanitizer.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::core {
namespace {

using servelab::testing::IsOk;
using servelab::testing::StatusIs;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

// Serving instances that exist only as counters; a formal request moves
// prefill prompt tokens and decode generation tokens like a real P/D pair.
class FakeInstanceDriver : public InstanceDriver {
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
  absl::Status WaitReady(const v1::ServingInstance&, absl::Time) override {
    return absl::OkStatus();
  }
  absl::StatusOr<bool> Alive(const v1::ServingInstance& instance) override {
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
    if (alive.count(instance.pid()) == 0) {
      return absl::UnavailableError("connect: Connection refused");  // Like a dead process.
    }
    if (on_scrape) on_scrape(instance.side(), counters[instance.side()]);
    log.push_back(absl::StrCat("scrape ", v1::Side_Name(instance.side())));
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
    check_cached.erase(instance.side());
    return absl::OkStatus();
  }
  bool ResetNeedsConfirmation(const v1::ServingInstance&) override { return true; }
  // A check request of 32 tokens: all of them hit when it was cached before.
  absl::Status SendCacheCheckRequest(const v1::ServingInstance& instance,
                                     const std::string&) override {
    absl::MutexLock lock(&mu);
    InstanceCounters& c = counters[instance.side()];
    c.prefix_cache_queries += 32;
    if (check_cached.count(instance.side()) > 0) c.prefix_cache_hits += 32;
    check_cached.insert(instance.side());
    ++check_requests;
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
  std::set<v1::Side> check_cached;
  // A router that serves the decode leg itself: tokens move, D's own
  // request counter does not.
  bool decode_drops_requests = false;
  // Per side: the two sides reset at the same time.
  std::map<v1::Side, int> refuse_resets;
  std::map<v1::Side, int> busy_resets;
  std::map<v1::Side, int> reset_calls;
  int check_requests = 0;
  // Called under `mu` before each scrape; may change the side's counters.
  std::function<void(v1::Side, InstanceCounters&)> on_scrape;
  // Scrapes and loads in the order they happened ("scrape SIDE_PREFILL",
  // "load PHASE_CACHE_SEED").
  std::vector<std::string> log;
};

class FakeLoad : public LoadDriver {
 public:
  FakeLoad(FakeInstanceDriver& engine, Clock& clock) : instances_(engine), clock_(clock) {}

  // Formal loads block from now on, as a long load would, until
  // ReleaseFormal(); with `until_cancelled`, a cancel ends them too (nothing
  // sent), polled on the clock as the real driver polls.
  void HoldFormal(bool until_cancelled) {
    absl::MutexLock lock(&mu);
    hold_formal_ = true;
    hold_until_cancelled_ = until_cancelled;
  }
  void ReleaseFormal() {
    absl::MutexLock lock(&mu);
    hold_formal_ = false;
  }
  // Formal loads that have started (and are held, while held).
  int formal_started() {
    absl::MutexLock lock(&mu);
    return formal_started_;
  }
  // Formal requests go out this far apart on the clock; the ones due at or
  // after the job's deadline are not sent.
  void SetFormalInterval(absl::Duration interval) {
    absl::MutexLock lock(&mu);
    formal_interval_ = interval;
  }
  // Formal loads report each record alone, while another thread ticks all
  // along, as the real driver's writer and watcher threads do.
  void TickWhileRecording() {
    absl::MutexLock lock(&mu);
    tick_while_recording_ = true;
  }
  int ticks_while_recording() { return ticks_while_recording_.load(); }
  // Called after each formal load, before it returns.
  void AfterFormal(std::function<void()> fn) {
    absl::MutexLock lock(&mu);
    after_formal_ = std::move(fn);
  }

  absl::StatusOr<LoadPlanSummary> Plan(const LoadJob& job) override {
    return LoadPlanSummary{.requests = Count(job)};
  }
  absl::StatusOr<LoadOutcome> Run(
      const LoadJob& job,
      const std::function<absl::Status(const std::vector<v1::RequestRecord>&)>& on_records,
      const std::function<void(const LoadTick&)>& on_tick, std::atomic<bool>& cancel) override {
    const int64_t planned = Count(job);
    int64_t n = planned;
    absl::Duration interval;
    std::function<void()> after;
    if (job.phase == v1::PHASE_FORMAL) {
      absl::MutexLock lock(&mu);
      ++formal_started_;
      interval = formal_interval_;
      after = after_formal_;
      if (hold_formal_ && !hold_until_cancelled_) {
        mu.Await(absl::Condition(
            +[](bool* held) { return !*held; }, &hold_formal_));
      }
    }
    while (job.phase == v1::PHASE_FORMAL && HeldUntilCancelled()) {
      if (cancel.load()) {
        if (after) after();
        return LoadOutcome{.planned = planned, .not_sent = planned, .all_ended = true};
      }
      clock_.SleepFor(absl::Milliseconds(20));
    }
    const absl::Time load_start = clock_.Now();
    if (interval > absl::ZeroDuration()) {
      for (n = 0; n < planned && clock_.Now() < job.deadline; ++n) clock_.SleepFor(interval);
    }
    std::vector<v1::RequestRecord> records;
    const auto start =
        google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(load_start));
    const int out = job.spec->workload().dataset().output_tokens();
    for (int i = 0; i < n; ++i) {
      v1::RequestRecord& r = records.emplace_back();
      r.set_experiment_id(job.experiment_id);
      r.set_phase(job.phase);
      r.set_attempt(job.attempt);
      r.set_request_index(i);
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
      absl::MutexLock lock(&instances_.mu);
      instances_.log.push_back(absl::StrCat("load ", v1::Phase_Name(job.phase)));
      if (job.phase == v1::PHASE_CACHE_SEED) {  // Half of what a seed asks is cached.
        instances_.counters[v1::SIDE_PREFILL].prefix_cache_queries += 100 * n;
        instances_.counters[v1::SIDE_PREFILL].prefix_cache_hits += 50 * n;
      }
      instances_.counters[v1::SIDE_PREFILL].prompt_tokens += 100 * n;
      instances_.counters[v1::SIDE_PREFILL].request_success += n;
      instances_.counters[v1::SIDE_DECODE].generation_tokens += out * n;
      instances_.counters[v1::SIDE_DECODE].request_success +=
          instances_.decode_drops_requests ? 0 : n;
    }
    {
      absl::MutexLock lock(&mu);
      sent[job.phase] += n;
      tags.push_back(job.load_tag);
    }
    if (absl::Status s = Report(job, records, on_records, on_tick); !s.ok()) return s;
    on_tick(LoadTick{n, n, 0});
    if (after) after();
    return LoadOutcome{.planned = planned,
                       .sent = n,
                       .completed = n,
                       .not_sent = planned - n,
                       .wall = absl::Milliseconds(10),
                       .summed_latency = absl::Milliseconds(10 * n),
                       .all_ended = true,
                       .first_token_read_lag_p99 = absl::Microseconds(250)};
  }

  int64_t SentIn(v1::Phase phase) {
    absl::MutexLock lock(&mu);
    return sent[phase];
  }

 private:
  int64_t Count(const LoadJob& job) {
    const v1::ExperimentSpec& spec = *job.spec;
    switch (job.phase) {
      case v1::PHASE_FORMAL:
        return spec.workload().num_requests();
      case v1::PHASE_WARMUP:
        return spec.deployment().warmup().requests();
      case v1::PHASE_CACHE_SEED:
        return spec.workload().dataset().prefix_groups();
      default:
        return 1;
    }
  }

  absl::Status Report(
      const LoadJob& job, const std::vector<v1::RequestRecord>& records,
      const std::function<absl::Status(const std::vector<v1::RequestRecord>&)>& on_records,
      const std::function<void(const LoadTick&)>& on_tick) {
    bool concurrent = false;
    {
      absl::MutexLock lock(&mu);
      concurrent = tick_while_recording_ && job.phase == v1::PHASE_FORMAL;
    }
    if (!concurrent) return on_records(records);
    std::atomic<bool> recorded{false};
    std::thread ticker([&] {
      const int64_t n = static_cast<int64_t>(records.size());
      while (!recorded.load()) {
        on_tick(LoadTick{n, 0, 0});
        ++ticks_while_recording_;
      }
    });
    // The records go out while the ticker is known to be ticking.
    while (ticks_while_recording_.load() == 0) std::this_thread::yield();
    absl::Status status;
    for (const v1::RequestRecord& r : records) {
      if (status = on_records({r}); !status.ok()) break;
    }
    recorded = true;
    ticker.join();
    return status;
  }

  bool HeldUntilCancelled() {
    absl::MutexLock lock(&mu);
    return hold_formal_ && hold_until_cancelled_;
  }

  FakeInstanceDriver& instances_;
  Clock& clock_;
  absl::Mutex mu;
  std::map<v1::Phase, int64_t> sent;
  std::vector<std::string> tags;
  bool hold_formal_ = false;
  bool hold_until_cancelled_ = false;
  bool tick_while_recording_ = false;
  std::atomic<int> ticks_while_recording_{0};
  int formal_started_ = 0;
  absl::Duration formal_interval_;
  std::function<void()> after_formal_;
};

class StageRunnerTest : public ::testing::Test {
 protected:
  // Tests start the runner themselves, so they can arrange things first.
  void SetUp() override { plane_.SetExecutor(&runner_); }
  void TearDown() override {
    load_.ReleaseFormal();  // A held load would keep the lane from stopping.
    runner_.Shutdown();
  }

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

  // Time is the fake clock's: a poll, a retry pause or a deadline never
  // sleeps for real.
  testing::FakeClock clock_;
  testing::FakeStore fake_store_;
  testing::FailingStore store_{fake_store_};
  ControlPlane plane_{store_, clock_};
  FakeInstanceDriver instances_;
  FakeLoad load_{instances_, clock_};
  NullRunnerMetrics metrics_;
  std::atomic<int> latched_calls_{0};
  StageRunner runner_{
      plane_.ledger(), instances_, load_, metrics_,
      StageRunner::Options{.log_dir = "/tmp",
                           .drain_poll = absl::Milliseconds(1),
                           .on_latched_error = [this](const absl::Status&) { ++latched_calls_; }}};
};

TEST_F(StageRunnerTest, BaseExperimentRunsEveryStage) {
  runner_.Start();
  v1::Experiment e = WaitFinal(Submit("", {}).id());
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  for (const v1::Stage& s : e.stages()) {
    EXPECT_EQ(s.status(), v1::STAGE_STATUS_SUCCEEDED) << StageLabel(s.name()) << " " << s.error();
    EXPECT_TRUE(s.has_started_at() && s.has_ended_at()) << StageLabel(s.name());
  }
  EXPECT_EQ(instances_.launches[v1::SIDE_PREFILL], 1);
  EXPECT_EQ(instances_.launches[v1::SIDE_ROUTER], 1);
  EXPECT_EQ(load_.SentIn(v1::PHASE_WARMUP), 6);
  EXPECT_EQ(load_.SentIn(v1::PHASE_CACHE_SEED), 2);
  EXPECT_EQ(e.progress().formal_requests_sent(), 20);
  EXPECT_TRUE(e.progress().has_first_formal_request_at());
  EXPECT_EQ(e.result().whole().requests_completed(), 20);
  EXPECT_EQ(StageOf(e, v1::STAGE_CACHE_SEED).counters().at("requests"), 2);
  EXPECT_EQ(StageOf(e, v1::STAGE_CACHE_SEED).counters().at("summed_request_latency_seconds"), 0.02);
  EXPECT_EQ(StageOf(e, v1::STAGE_FORMAL_LOAD).counters().at("client_read_lag_p99_seconds"), 250e-6);
  absl::StatusOr<v1::Summary> summary = plane_.Summary();
  ASSERT_THAT(summary, IsOk());
  EXPECT_EQ(summary->lane_owner(), "");
  EXPECT_EQ(summary->hot_deployment().experiment_id(), e.id());
  EXPECT_THAT(summary->hot_deployment().cache_state(), HasSubstr(e.id() + "'s formal load"));
}

// The real driver reports records from its writer thread and ticks from
// its watcher thread at the same time (load_driver.h), and both change the
// formal load's progress. Under TSan (deploy/test.sh --sanitize thread) a
// progress changed without a lock is a reported race; servelabd had one.
TEST_F(StageRunnerTest, RecordsAndTicksFromTwoThreadsAtOnceKeepTheProgressWhole) {
  load_.TickWhileRecording();
  runner_.Start();
  v1::Experiment e = WaitFinal(Submit("", {}).id());
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  EXPECT_GT(load_.ticks_while_recording(), 0);
  EXPECT_EQ(e.progress().formal_requests_sent(), 20);
  EXPECT_EQ(e.progress().formal_requests_completed(), 20);
  EXPECT_TRUE(e.progress().has_first_formal_request_at());
  EXPECT_TRUE(e.progress().has_first_formal_request_delay());
}

// Only a write that tells the outside world a fact, or comes before the
// formal load's first request, waits for the disk; the bookkeeping between
// them is ordered, and reaches the disk with the next synced write
// (docs/design.md §5, "Durability").
TEST_F(StageRunnerTest, OnlyTheSubmitTheFormalLoadAndTheOutcomeWaitForTheDisk) {
  runner_.Start();
  v1::Experiment e = WaitFinal(Submit("", {}).id());
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  absl::StatusOr<std::vector<Event>> events = fake_store_.ListEvents(e.id());
  ASSERT_THAT(events, IsOk());
  std::vector<std::string> synced;
  int ordered = 0;
  for (const Event& event : *events) {
    if (event.durability == Durability::kSynced) synced.push_back(event.detail);
    if (event.durability == Durability::kOrdered) ++ordered;
  }
  // The last preparing stage's end rides on the formal load's start.
  EXPECT_THAT(synced, ElementsAre(HasSubstr("frozen spec"),
                                  "cache_seed succeeded; formal_load running (attempt 1)",
                                  "formal_load succeeded", HasSubstr("running -> succeeded")));
  // queued -> running, preflight's start and end, every other stage's start
  // (with the end before it), drain_confirm's end, analyze's and decide's.
  EXPECT_GE(ordered, 15);
  EXPECT_THAT(fake_store_.record_durabilities(),
              UnorderedElementsAre(Pair(v1::PHASE_WARMUP, Durability::kOrdered),
                                   Pair(v1::PHASE_ROUTE_VERIFY, Durability::kOrdered),
                                   Pair(v1::PHASE_CACHE_SEED, Durability::kOrdered),
                                   Pair(v1::PHASE_FORMAL, Durability::kSynced)));
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
  EXPECT_EQ(instances_.launches[v1::SIDE_DECODE], 1);
  EXPECT_EQ(load_.SentIn(v1::PHASE_WARMUP), warmups);
  EXPECT_TRUE(e.progress().has_first_formal_request_delay());
  EXPECT_EQ(e.result().decision().baseline_experiment_id(), base.id());
}

// Between the lane's stages one write, not two: a preparing stage's end
// rides on the next stage's start, and so do the reused stages; a plan that
// stands is not written again (issue 9, P1).
TEST_F(StageRunnerTest, ADeltaWritesOneCommitPerLaneStep) {
  runner_.Start();
  v1::Experiment base = WaitFinal(Submit("", {}).id());
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED);
  v1::Experiment e = WaitFinal(Submit(base.id(), {"workload.concurrency=8"}).id());
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  absl::StatusOr<std::vector<Event>> events = fake_store_.ListEvents(e.id());
  ASSERT_THAT(events, IsOk());
  std::vector<std::string> details;
  for (const Event& event : *events) {
    if (event.kind != "progress") details.push_back(event.detail);
  }
  EXPECT_THAT(
      details,
      ElementsAre(HasSubstr("frozen spec"), "queued -> running", "preflight running (attempt 1)",
                  "preflight succeeded",
                  AllOf(StartsWith("launch_prefill reused: "), HasSubstr("route_verify reused: "),
                        EndsWith("; cache_reset running (attempt 1)")),
                  "cache_reset succeeded; cache_seed running (attempt 1)",
                  "cache_seed succeeded; formal_load running (attempt 1)", "formal_load succeeded",
                  "drain_confirm running (attempt 1)", "drain_confirm succeeded",
                  "analyze running (attempt 1)", "analyze succeeded", "decide running (attempt 1)",
                  "decide succeeded", HasSubstr("running -> succeeded")));
  for (const v1::Stage& stage : e.stages()) {
    EXPECT_THAT(stage.status(), AnyOf(v1::STAGE_STATUS_SUCCEEDED, v1::STAGE_STATUS_REUSED))
        << StageLabel(stage.name());
    EXPECT_TRUE(stage.has_ended_at()) << StageLabel(stage.name());
  }
}

TEST_F(StageRunnerTest, DecodeDeltaRelaunchesDecodeOnly) {
  runner_.Start();
  v1::Experiment base = WaitFinal(Submit("", {}).id());
  v1::Experiment e = WaitFinal(Submit(base.id(), {"deployment.decode.max_num_seqs=64"}).id());
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  EXPECT_EQ(StageOf(e, v1::STAGE_LAUNCH_PREFILL).status(), v1::STAGE_STATUS_REUSED);
  EXPECT_EQ(StageOf(e, v1::STAGE_LAUNCH_DECODE).status(), v1::STAGE_STATUS_SUCCEEDED);
  EXPECT_EQ(instances_.launches[v1::SIDE_PREFILL], 1);
  EXPECT_EQ(instances_.launches[v1::SIDE_DECODE], 2);
}

// The caches are reset right after a drained load, so the next
// experiment's cache_reset only checks that nothing touched them since.
TEST_F(StageRunnerTest, ADrainedLoadLeavesTheCachesResetForTheNextExperiment) {
  runner_.Start();
  v1::Experiment base = WaitFinal(Submit("", {}).id());
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  EXPECT_EQ(StageOf(base, v1::STAGE_CACHE_RESET).counters().at("reset_ahead"), 0);
  EXPECT_EQ(StageOf(base, v1::STAGE_DRAIN_CONFIRM).counters().at("caches_reset_ahead"), 1);
  EXPECT_EQ(instances_.reset_calls[v1::SIDE_PREFILL], 2);  // Its own, and the one ahead.
  absl::StatusOr<v1::Summary> summary = plane_.Summary();
  ASSERT_THAT(summary, IsOk());
  EXPECT_THAT(summary->hot_deployment().cache_state(),
              HasSubstr("empty: reset after " + base.id() + "'s formal load drained"));

  v1::Experiment e = WaitFinal(Submit(base.id(), {"workload.concurrency=8"}).id());
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  const v1::Stage& reset = StageOf(e, v1::STAGE_CACHE_RESET);
  EXPECT_EQ(reset.counters().at("reset_ahead"), 1);
  EXPECT_EQ(reset.counters().at("prefill_reset_attempts"), 0);
  EXPECT_EQ(reset.counters().at("decode_cache_check_requests"), 0);
  // Only the reset ahead of whatever comes next.
  EXPECT_EQ(instances_.reset_calls[v1::SIDE_PREFILL], 3);
  EXPECT_EQ(instances_.reset_calls[v1::SIDE_DECODE], 3);
}

// After a reset ahead, cache_seed counts its hits from the prefill counters
// cache_reset has just scraped: no scrape of its own before the seed load.
TEST_F(StageRunnerTest, TheSeedStartsFromTheScrapeThatFoundTheCachesEmpty) {
  runner_.Start();
  v1::Experiment base = WaitFinal(Submit("", {}).id());
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  EXPECT_EQ(StageOf(base, v1::STAGE_CACHE_SEED).counters().at("seed_hit_ratio"), 0.5);
  size_t from = 0;
  {
    absl::MutexLock lock(&instances_.mu);
    from = instances_.log.size();
  }
  v1::Experiment e = WaitFinal(Submit(base.id(), {"workload.concurrency=8"}).id());
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  ASSERT_EQ(StageOf(e, v1::STAGE_CACHE_RESET).counters().at("reset_ahead"), 1);
  EXPECT_EQ(StageOf(e, v1::STAGE_CACHE_SEED).counters().at("seed_hit_ratio"), 0.5);
  absl::MutexLock lock(&instances_.mu);
  std::vector<std::string> prefill_before_seed;
  for (size_t i = from; i < instances_.log.size(); ++i) {
    if (instances_.log[i] == "load PHASE_CACHE_SEED") break;
    if (instances_.log[i] != "scrape SIDE_DECODE") prefill_before_seed.push_back(instances_.log[i]);
  }
  EXPECT_THAT(prefill_before_seed, ElementsAre("scrape SIDE_PREFILL"));  // cache_reset's
}

// A request that reached an instance after the reset ahead (its counters
// moved), or a relaunched side, gets the whole confirmed reset.
TEST_F(StageRunnerTest, ACacheTouchedOrRelaunchedSinceTheResetAheadIsResetAgain) {
  runner_.Start();
  v1::Experiment base = WaitFinal(Submit("", {}).id());
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  {
    absl::MutexLock lock(&instances_.mu);
    instances_.counters[v1::SIDE_PREFILL].prompt_tokens += 100;
    instances_.counters[v1::SIDE_PREFILL].prefix_cache_queries += 100;
  }
  v1::Experiment touched = WaitFinal(Submit(base.id(), {"workload.concurrency=8"}).id());
  ASSERT_EQ(touched.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << touched.blocker();
  EXPECT_EQ(StageOf(touched, v1::STAGE_CACHE_RESET).counters().at("reset_ahead"), 0);
  EXPECT_EQ(StageOf(touched, v1::STAGE_CACHE_RESET).counters().at("prefill_reset_attempts"), 1);

  v1::Experiment relaunched =
      WaitFinal(Submit(base.id(), {"deployment.decode.max_num_seqs=64"}).id());
  ASSERT_EQ(relaunched.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << relaunched.blocker();
  EXPECT_EQ(StageOf(relaunched, v1::STAGE_LAUNCH_DECODE).status(), v1::STAGE_STATUS_SUCCEEDED);
  EXPECT_EQ(StageOf(relaunched, v1::STAGE_CACHE_RESET).counters().at("reset_ahead"), 0);
  EXPECT_EQ(StageOf(relaunched, v1::STAGE_CACHE_RESET).counters().at("decode_reset_attempts"), 1);
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
  instances_.binary = "/nonexistent/servelab-sim";
  v1::Experiment e = WaitFinal(Submit("", {}).id());
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::NO_REQUESTS_SENT);
  EXPECT_THAT(e.blocker(), HasSubstr("not an executable"));
  EXPECT_TRUE(instances_.launches.empty());
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
  EXPECT_TRUE(instances_.launches.empty());
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
      instances_.alive.insert(instance.pid());
    }
    e_ = Submit("", {"limits.warmup_timeout=300ms", "limits.drain_timeout=100ms"});
  }

  StageEnv Env() {
    return StageEnv{store_,
                    baselines_,
                    instances_,
                    load_,
                    metrics_,
                    clock_,
                    "/tmp",
                    cancel_,
                    absl::Milliseconds(10),
                    absl::Milliseconds(1)};
  }

  BaselineIndex baselines_{plane_.ledger()};
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
  instances_.decode_drops_requests = true;
  EXPECT_THAT(RouteVerify(env, e_),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("decode by 0 requests")));
}

TEST_F(StageBodyTest, CacheResetIsConfirmedByACheckPromptThatNoLongerHits) {
  StageEnv env = Env();
  instances_.refuse_resets[v1::SIDE_PREFILL] = 2;  // Answered OK twice, did nothing.
  absl::StatusOr<Counters> c = CacheReset(env, e_);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->at("prefill_reset_attempts"), 3);
  EXPECT_EQ(c->at("decode_reset_attempts"), 1);
  // One check request to cache the prompt, then one after every reset that answered OK.
  EXPECT_EQ(c->at("prefill_cache_check_requests"), 4);
  EXPECT_EQ(c->at("decode_cache_check_requests"), 2);
}

TEST_F(StageBodyTest, CacheResetRetriesWhileTheEngineIsBusy) {
  StageEnv env = Env();
  instances_.busy_resets[v1::SIDE_PREFILL] = 3;  // SGLang's /flush_cache answering 400.
  absl::StatusOr<Counters> c = CacheReset(env, e_);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->at("prefill_reset_attempts"), 4);
}

TEST_F(StageBodyTest, CacheResetNeverConfirmedFailsAtTheDeadline) {
  StageEnv env = Env();
  instances_.refuse_resets[v1::SIDE_PREFILL] = 1 << 30;
  EXPECT_THAT(CacheReset(env, e_), StatusIs(absl::StatusCode::kDeadlineExceeded,
                                            AllOf(HasSubstr("prefill prefix cache not reset"),
                                                  HasSubstr("still hit 32 tokens"))));
}

TEST_F(StageBodyTest, CacheResetWaitsForKvBlocksToBeReleased) {
  StageEnv env = Env();
  {
    absl::MutexLock lock(&instances_.mu);
    instances_.counters[v1::SIDE_PREFILL].kv_cache_usage = 0.25;  // A NIXL lease.
  }
  EXPECT_THAT(CacheReset(env, e_),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("KV usage 0.25")));
  EXPECT_EQ(instances_.reset_calls[v1::SIDE_PREFILL], 0);  // Never reset while leased.
  // The lease ends 50 ms (of the clock) after the next reset starts.
  const absl::Time released = clock_.Now() + absl::Milliseconds(50);
  instances_.on_scrape = [&](v1::Side side, InstanceCounters& c) {
    if (side == v1::SIDE_PREFILL && clock_.Now() >= released) c.kv_cache_usage = 0;
  };
  EXPECT_THAT(CacheReset(env, e_), IsOk());
  EXPECT_GE(clock_.Now(), released);
  EXPECT_EQ(instances_.reset_calls[v1::SIDE_PREFILL], 1);
}

TEST_F(StageBodyTest, DrainCountsRequestsBetweenThePdQueues) {
  StageEnv env = Env();
  {
    absl::MutexLock lock(&instances_.mu);
    // Neither running nor waiting, but still in SGLang's transfer queue.
    instances_.counters[v1::SIDE_DECODE].requests_in_transfer = 2;
  }
  EXPECT_THAT(DrainConfirm(env, e_),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("2 in transfer")));
  {
    absl::MutexLock lock(&instances_.mu);
    instances_.counters[v1::SIDE_DECODE].requests_in_transfer = 0;
  }
  EXPECT_THAT(DrainConfirm(env, e_), IsOk());
}

// A process that exited holds no request, so the drain is confirmed without
// it; the formal load it died under is interrupted, not finished.
TEST_F(StageBodyTest, AnInstanceThatExitedIsDrainedButInterruptsTheFormalLoad) {
  StageEnv env = Env();
  {
    absl::MutexLock lock(&instances_.mu);
    instances_.alive.erase(static_cast<int>(v1::SIDE_DECODE));
  }
  EXPECT_THAT(DrainConfirm(env, e_), IsOk());
  EXPECT_THAT(FormalLoad(
                  env, e_, 1, [](const v1::Progress&, bool) {}, CheckDrained(env, e_)),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("decode (pid 2) exited during the formal load")));
}

TEST_F(StageBodyTest, FormalDeadlineFiresOnTheClock) {
  v1::Experiment e = Submit("", {"limits.formal_deadline=1s"});
  load_.SetFormalInterval(absl::Milliseconds(100));  // 20 requests need 2 s.
  StageEnv env = Env();
  const absl::Time start = clock_.Now();
  EXPECT_THAT(FormalLoad(
                  env, e, 1, [](const v1::Progress&, bool) {}, CheckDrained(env, e)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr("limits.formal_deadline (1s) reached: "
                                 "10 of 20 formal requests sent")));
  EXPECT_EQ(clock_.Now() - start, absl::Seconds(1));
}

TEST_F(StageBodyTest, DrainTimeoutFiresOnTheClock) {
  {
    absl::MutexLock lock(&instances_.mu);
    instances_.counters[v1::SIDE_PREFILL].requests_running = 1;
  }
  StageEnv env = Env();
  const absl::Time start = clock_.Now();
  EXPECT_THAT(DrainConfirm(env, e_),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("prefill: 1 running")));
  // limits.drain_timeout=100ms, polled every drain_poll (1 ms).
  EXPECT_EQ(clock_.Now() - start, absl::Milliseconds(100));
  EXPECT_EQ(clock_.sleeps(), 100);
}

// The runner checks the drain while the formal stage's start commits; a
// check that found the instances busy still keeps every request unsent.
TEST_F(StageBodyTest, AFormalLoadOnTopOfAnUndrainedOneSendsNothing) {
  {
    absl::MutexLock lock(&instances_.mu);
    instances_.counters[v1::SIDE_DECODE].requests_running = 1;
  }
  StageEnv env = Env();
  DrainCheck busy = CheckDrained(env, e_);
  EXPECT_THAT(busy.confirmed, StatusIs(absl::StatusCode::kFailedPrecondition,
                                       HasSubstr("cannot confirm the load ended")));
  EXPECT_FALSE(busy.prefill_idle.has_value());
  EXPECT_THAT(FormalLoad(
                  env, e_, 1, [](const v1::Progress&, bool) {}, std::move(busy)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("an earlier load has not drained"),
                             HasSubstr("decode: 1 running"))));
  EXPECT_EQ(load_.formal_started(), 0);
  EXPECT_EQ(load_.SentIn(v1::PHASE_FORMAL), 0);
}

TEST_F(StageBodyTest, CacheResetDeadlineFiresOnTheClock) {
  StageEnv env = Env();
  instances_.busy_resets[v1::SIDE_DECODE] = 1 << 30;  // Never accepted.
  const absl::Time start = clock_.Now();
  EXPECT_THAT(CacheReset(env, e_), StatusIs(absl::StatusCode::kDeadlineExceeded,
                                            AllOf(HasSubstr("decode prefix cache not reset"),
                                                  HasSubstr("by limits.warmup_timeout"))));
  // limits.warmup_timeout=300ms; both sides' polls move the one clock.
  EXPECT_GE(clock_.Now() - start, absl::Milliseconds(300));
}

// Cancel returns at once, however long the running experiments take to
// reach their safe point; the runner records CANCELLED there.
TEST_F(StageRunnerTest, FiftyConcurrentCancelsDoNotBlockAndStatusStillAnswers) {
  load_.HoldFormal(/*until_cancelled=*/false);  // The lane's load ignores cancel until released.
  runner_.Start();
  constexpr int kExperiments = 50;
  std::vector<std::string> ids;
  for (int i = 0; i < kExperiments; ++i) ids.push_back(Submit("", {}).id());
  ASSERT_TRUE(servelab::testing::WaitFor(
      [&] {
        if (load_.formal_started() < 1) return false;
        for (const std::string& id : ids) {
          if (plane_.Get(id)->state() != v1::EXPERIMENT_STATE_RUNNING) return false;
        }
        return true;
      },
      absl::Seconds(20)));

  std::vector<absl::StatusOr<v1::Experiment>> replies(kExperiments);
  std::atomic<bool> go{false};
  std::vector<std::thread> cancels;
  const absl::Time started = absl::Now();  // Real time: an upper bound only.
  for (int i = 0; i < kExperiments; ++i) {
    cancels.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      replies[i] = plane_.Cancel(ids[i]);
    });
  }
  go = true;
  const absl::Time status_start = absl::Now();
  absl::StatusOr<v1::Experiment> status = plane_.Get(ids[0]);
  const absl::Duration status_took = absl::Now() - status_start;
  for (std::thread& t : cancels) t.join();
  const absl::Duration cancels_took = absl::Now() - started;
  ASSERT_THAT(status, IsOk());
  EXPECT_LT(status_took, absl::Seconds(1) * servelab::testing::kSanitizerTimeFactor);
  EXPECT_LT(cancels_took, absl::Seconds(1) * servelab::testing::kSanitizerTimeFactor);
  for (int i = 0; i < kExperiments; ++i) {
    ASSERT_THAT(replies[i], IsOk());
    // Still running: the lane's load has not reached its safe point.
    EXPECT_EQ(replies[i]->state(), v1::EXPERIMENT_STATE_RUNNING) << ids[i];
  }

  load_.ReleaseFormal();
  for (const std::string& id : ids) {
    EXPECT_EQ(WaitFinal(id).state(), v1::EXPERIMENT_STATE_CANCELLED) << id;
  }
  v1::Experiment first = *plane_.Get(ids[0]);
  EXPECT_EQ(StageOf(first, v1::STAGE_FORMAL_LOAD).status(), v1::STAGE_STATUS_FAILED);
  EXPECT_EQ(StageOf(first, v1::STAGE_DRAIN_CONFIRM).status(), v1::STAGE_STATUS_SUCCEEDED);
  EXPECT_EQ(load_.formal_started(), 1);  // The others never reached the lane's load.
}

// A cancel between two preparing stages still writes the end that was
// waiting to ride on the next stage's start.
TEST_F(StageRunnerTest, ACancelBetweenPreparingStagesKeepsTheEndOfTheOneThatRan) {
  std::string id;
  std::atomic<bool> cancelled{false};
  instances_.on_scrape = [&](v1::Side, InstanceCounters&) {
    if (!id.empty() && !cancelled.exchange(true)) {
      EXPECT_THAT(plane_.Cancel(id), IsOk());
    }
  };
  id = Submit("", {}).id();
  runner_.Start();
  v1::Experiment e = WaitFinal(id);
  ASSERT_TRUE(cancelled.load());
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_CANCELLED);
  EXPECT_EQ(load_.formal_started(), 0);
  int ended = 0;
  for (const v1::Stage& stage : e.stages()) {
    EXPECT_NE(stage.status(), v1::STAGE_STATUS_RUNNING) << StageLabel(stage.name());
    if (stage.status() == v1::STAGE_STATUS_SUCCEEDED) {
      EXPECT_TRUE(stage.has_ended_at()) << StageLabel(stage.name());
      ++ended;
    }
  }
  EXPECT_GE(ended, 3) << e.DebugString();  // Freeze, preflight, and the stage the cancel met.
}

TEST_F(StageRunnerTest, CancelDuringTheFormalLoadDrainsThenCancels) {
  load_.HoldFormal(/*until_cancelled=*/true);
  runner_.Start();
  const std::string id = Submit("", {}).id();
  ASSERT_TRUE(
      servelab::testing::WaitFor([&] { return load_.formal_started() == 1; }, absl::Seconds(20)));
  absl::StatusOr<v1::Experiment> reply = plane_.Cancel(id);
  ASSERT_THAT(reply, IsOk());
  v1::Experiment e = WaitFinal(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_CANCELLED);
  EXPECT_EQ(StageOf(e, v1::STAGE_FORMAL_LOAD).status(), v1::STAGE_STATUS_FAILED);
  EXPECT_THAT(StageOf(e, v1::STAGE_FORMAL_LOAD).error(),
              HasSubstr("cancelled during the formal load"));
  // The drain is confirmed before the lane is released, cancel or not.
  EXPECT_EQ(StageOf(e, v1::STAGE_DRAIN_CONFIRM).status(), v1::STAGE_STATUS_SUCCEEDED);
  EXPECT_EQ(StageOf(e, v1::STAGE_ANALYZE).status(), v1::STAGE_STATUS_PENDING);
  EXPECT_THAT(plane_.Cancel(id),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("already cancelled")));
}

TEST_F(StageRunnerTest, LoadEndUnknownHoldsTheLaneUntilTheInstancesDrain) {
  // After the formal load, decode still reports a request running.
  load_.AfterFormal([&] {
    absl::MutexLock lock(&instances_.mu);
    instances_.counters[v1::SIDE_DECODE].requests_running = 1;
  });
  runner_.Start();
  const std::string a = Submit("", {"limits.drain_timeout=100ms"}).id();
  ASSERT_TRUE(servelab::testing::WaitFor(
      [&] { return plane_.Get(a)->failure_class() == v1::LOAD_END_UNKNOWN; }, absl::Seconds(20)));
  load_.AfterFormal(nullptr);
  EXPECT_EQ(plane_.Get(a)->state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(runner_.lane().owner, a);  // Held: no load may start on top.

  const std::string b = Submit(a, {"workload.concurrency=2"}).id();
  ASSERT_TRUE(servelab::testing::WaitFor(
      [&] {
        return absl::StrContains(plane_.Get(b)->blocker(),
                                 "waiting for the accelerator lane: " + a + " holds it");
      },
      absl::Seconds(20)))
      << plane_.Get(b)->blocker();
  EXPECT_EQ(load_.formal_started(), 1);
  EXPECT_EQ(runner_.lane().owner, a);

  {
    absl::MutexLock lock(&instances_.mu);
    instances_.counters[v1::SIDE_DECODE].requests_running = 0;
  }
  EXPECT_EQ(WaitFinal(b).state(), v1::EXPERIMENT_STATE_SUCCEEDED);
  EXPECT_THAT(plane_.Get(a)->blocker(), HasSubstr("instances drained; the lane is free"));
  EXPECT_EQ(load_.formal_started(), 2);
}

TEST_F(StageRunnerTest, ATransientWriteFailureIsRetried) {
  store_.FailWrites({.kind = "state", .detail = "running -> succeeded", .times = 2},
                    absl::UnavailableError("database is locked"));
  runner_.Start();
  v1::Experiment e = WaitFinal(Submit("", {}).id());
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED);
  EXPECT_EQ(store_.failures(), 2);
  EXPECT_THAT(runner_.LatchedError(), IsOk());
  EXPECT_EQ(latched_calls_.load(), 0);
  EXPECT_GE(clock_.slept(), absl::Milliseconds(200));  // Two retry pauses, on the clock.
}

// One call site of a runner write: the event that write commits, and how to
// get the runner there.
struct WriteSite {
  std::string name;
  testing::FailingStore::Rule rule;
  enum class Path {
    kBase,            // One base experiment.
    kFailingBase,     // A base experiment whose preflight fails.
    kDelta,           // A concurrency delta after a succeeded base (reuses stages).
    kReanalysis,      // An analysis delta after a succeeded base (skips stages).
    kBehindBusyLane,  // A second experiment while the first holds the lane.
    kCancelled,       // A base experiment cancelled during its formal load.
    kRecovered,       // Recovery of an experiment left running.
    kStalePlan,       // A base experiment whose stored plan no longer matches what runs.
  } path;
};

void PrintTo(const WriteSite& site, std::ostream* os) { *os << site.name; }

class LatchedWriteTest : public StageRunnerTest, public ::testing::WithParamInterface<WriteSite> {};

TEST_P(LatchedWriteTest, AWriteThatKeepsFailingIsLatched) {
  const WriteSite& site = GetParam();
  const absl::Status locked = absl::UnavailableError("database is locked");
  testing::FailingStore::Rule rule = site.rule;
  rule.times = -1;  // Every try: the write fails for good.
  std::string id;
  switch (site.path) {
    case WriteSite::Path::kBase:
    case WriteSite::Path::kFailingBase:
    case WriteSite::Path::kCancelled:
      if (site.path == WriteSite::Path::kFailingBase)
        instances_.binary = "/nonexistent/servelab-sim";
      if (site.path == WriteSite::Path::kCancelled) load_.HoldFormal(/*until_cancelled=*/true);
      store_.FailWrites(rule, locked);
      runner_.Start();
      id = Submit("", {}).id();
      if (site.path == WriteSite::Path::kCancelled) {
        ASSERT_TRUE(servelab::testing::WaitFor([&] { return load_.formal_started() == 1; },
                                               absl::Seconds(20)));
        ASSERT_THAT(plane_.Cancel(id), IsOk());
      }
      break;
    case WriteSite::Path::kDelta:
    case WriteSite::Path::kReanalysis: {
      runner_.Start();
      v1::Experiment base = WaitFinal(Submit("", {}).id());
      ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED);
      store_.FailWrites(rule, locked);
      id = Submit(base.id(), {site.path == WriteSite::Path::kDelta
                                  ? "workload.concurrency=8"
                                  : "analysis.decision.metric=output_tokens_per_second"})
               .id();
      break;
    }
    case WriteSite::Path::kBehindBusyLane:
      load_.HoldFormal(/*until_cancelled=*/false);
      runner_.Start();
      Submit("", {});
      ASSERT_TRUE(servelab::testing::WaitFor([&] { return load_.formal_started() == 1; },
                                             absl::Seconds(20)));
      store_.FailWrites(rule, locked);
      id = Submit("", {}).id();
      break;
    case WriteSite::Path::kStalePlan: {
      // The lane writes a plan only when it differs from the stored one.
      v1::Experiment e = Submit("", {});
      id = e.id();
      for (v1::Stage& stage : *e.mutable_stages()) {
        if (stage.name() == v1::STAGE_LAUNCH_PREFILL) stage.set_action(v1::STAGE_ACTION_REUSE);
      }
      ASSERT_THAT(store_.UpdateExperiment(e, Event{.kind = "test"}), IsOk());
      store_.FailWrites(rule, locked);
      runner_.Start();
      break;
    }
    case WriteSite::Path::kRecovered: {
      v1::Experiment e = Submit("", {});
      id = e.id();
      e.set_state(v1::EXPERIMENT_STATE_RUNNING);
      ASSERT_THAT(store_.UpdateExperiment(e, Event{.kind = "state"}), IsOk());
      store_.FailWrites(rule, locked);
      EXPECT_THAT(runner_.Recover(), IsOk());  // Latched, not fatal: the daemon says why.
      runner_.Start();
      break;
    }
  }
  ASSERT_TRUE(
      servelab::testing::WaitFor([&] { return !runner_.LatchedError().ok(); }, absl::Seconds(20)))
      << plane_.Get(id)->DebugString();
  load_.ReleaseFormal();

  // Every try failed, then nothing more was written.
  EXPECT_EQ(store_.failures(), 3);
  EXPECT_EQ(latched_calls_.load(), 1);
  EXPECT_THAT(runner_.LatchedError(),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr(id), HasSubstr(site.rule.kind),
                             HasSubstr("failed 3 times: database is locked"))));
  // Storage keeps the last state it holds; it never moves on without the runner.
  EXPECT_FALSE(IsFinal(plane_.Get(id)->state())) << plane_.Get(id)->DebugString();

  // New work is refused, naming the error; a plan is still answered.
  v1::SubmitExperimentRequest submit;
  submit.set_base_id(id);
  EXPECT_THAT(plane_.Submit(submit),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("accepts no new work"), HasSubstr("database is locked"),
                             HasSubstr("restart servelabd"))));
  v1::ResumeExperimentRequest resume;
  resume.set_id(id);
  EXPECT_THAT(plane_.Resume(resume),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("database is locked")));
  submit.set_validate_only(true);
  EXPECT_THAT(plane_.Submit(submit), IsOk());
  absl::StatusOr<v1::Summary> summary = plane_.Summary();
  ASSERT_THAT(summary, IsOk());
  EXPECT_FALSE(summary->serving());
  EXPECT_THAT(summary->next_step().reason(), HasSubstr("database is locked"));
}

INSTANTIATE_TEST_SUITE_P(
    EveryCallSite, LatchedWriteTest,
    ::testing::Values(
        WriteSite{"QueuedToRunning",
                  {.kind = "state", .detail = "queued -> running"},
                  WriteSite::Path::kBase},
        WriteSite{
            "StageRunning", {.kind = "stage", .detail = "warmup running"}, WriteSite::Path::kBase},
        WriteSite{"StageSucceeded",
                  {.kind = "stage", .detail = "cache_seed succeeded"},
                  WriteSite::Path::kBase},
        WriteSite{"StageFailed",
                  {.kind = "stage", .detail = "preflight failed"},
                  WriteSite::Path::kFailingBase},
        WriteSite{"ExperimentFailed", {.kind = "failed"}, WriteSite::Path::kFailingBase},
        WriteSite{"Replan", {.kind = "plan"}, WriteSite::Path::kStalePlan},
        WriteSite{"Progress", {.kind = "progress"}, WriteSite::Path::kBase},
        WriteSite{"Succeeded",
                  {.kind = "state", .detail = "running -> succeeded"},
                  WriteSite::Path::kBase},
        WriteSite{"ReusedStages", {.kind = "stage", .detail = "reused"}, WriteSite::Path::kDelta},
        WriteSite{
            "SkippedStages", {.kind = "stage", .detail = "skipped"}, WriteSite::Path::kReanalysis},
        WriteSite{"Blocker",
                  {.kind = "blocker", .detail = "waiting for the accelerator lane"},
                  WriteSite::Path::kBehindBusyLane},
        WriteSite{"Cancelled", {.kind = "cancelled"}, WriteSite::Path::kCancelled},
        WriteSite{"Recovered", {.kind = "recovered"}, WriteSite::Path::kRecovered}),
    [](const ::testing::TestParamInfo<WriteSite>& info) { return info.param.name; });

}  // namespace
}  // namespace servelab::core
