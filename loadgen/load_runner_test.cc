#include "loadgen/load_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "loadgen/fake_server.h"
#include "loadgen/realtime.h"
#include "loadgen/schedule.h"
#include "tests/testing/ports.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"

namespace servelab::loadgen {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::AllOf;
using ::testing::Each;
using ::testing::HasSubstr;
using ::testing::Le;
using ::testing::Not;
using ::testing::Property;

PromptSet Prompts(int n, int input, int output) {
  v1::DatasetSpec spec;
  spec.set_input_tokens(input);
  spec.set_output_tokens(output);
  return *BuildPrompts(spec, n);
}

LoadOptions Options(const FakeServer& server, int concurrency) {
  LoadOptions o;
  o.url = server.url();
  o.concurrency = concurrency;
  o.experiment_id = "exp-7";
  o.phase = v1::PHASE_FORMAL;
  o.attempt = 2;
  o.load_tag = "exp-7/formal";
  o.request_timeout = absl::Seconds(10);
  return o;
}

// Runs three requests that the server makes fail: their records.
std::vector<v1::RequestRecord> RunThreeThatFail(const LoadOptions& o) {
  auto runner = LoadRunner::Create(o);
  MemorySink sink;
  absl::StatusOr<LoadSummary> s = (*runner)->Run(Prompts(3, 4, 4), {}, sink);
  EXPECT_THAT(s, IsOk());
  if (s.ok()) {
    EXPECT_EQ(s->failed, 3);
  }
  EXPECT_EQ(sink.records().size(), 3u);
  return sink.records();
}

// Real P/D proxies serve no /v1/models (vLLM's toy_proxy_server.py): with
// the model named, the runner asks for nothing but the generation route.
TEST(LoadRunnerTest, NamedModelNeedsNoModelsRoute) {
  FakeServer server;
  LoadOptions options = Options(server, 2);
  options.model = "/models/moe";
  auto runner = LoadRunner::Create(options);
  ASSERT_THAT(runner, IsOk());
  MemorySink sink;
  absl::StatusOr<LoadSummary> s = (*runner)->Run(Prompts(3, 8, 2), {}, sink);
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->completed, 3);
  EXPECT_EQ(s->model, "/models/moe");
  EXPECT_EQ(server.model_lookups(), 0);
  EXPECT_THAT(server.bodies(), Each(AllOf(HasSubstr("\"model\":\"/models/moe\""),
                                          HasSubstr("\"user\":\"exp-7/formal\""))));
}

TEST(LoadRunnerTest, StreamsExactLengthsWithOrderedTimestamps) {
  FakeServer server;
  server.set_cached_tokens(3);
  auto runner = LoadRunner::Create(Options(server, 2));
  ASSERT_THAT(runner, IsOk());
  MemorySink sink;
  absl::StatusOr<LoadSummary> s = (*runner)->Run(Prompts(4, 8, 5), {}, sink);
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->completed, 4);
  EXPECT_EQ(s->model, "fake-model");
  ASSERT_EQ(sink.records().size(), 4u);
  for (const auto& r : sink.records()) {
    EXPECT_EQ(r.error(), "");
    EXPECT_EQ(r.http_status(), 200);
    EXPECT_EQ(r.experiment_id(), "exp-7");
    EXPECT_EQ(r.phase(), v1::PHASE_FORMAL);
    EXPECT_EQ(r.attempt(), 2);
    EXPECT_EQ(r.prompt_tokens(), 8);
    EXPECT_EQ(r.requested_prompt_tokens(), 8);
    EXPECT_EQ(r.completion_tokens(), 5);
    EXPECT_EQ(r.requested_completion_tokens(), 5);
    EXPECT_EQ(r.cached_tokens(), 3);
    ASSERT_EQ(r.chunk_ns_size(), 5);
    EXPECT_EQ(r.first_token_ns(), r.chunk_ns(0));
    EXPECT_LE(r.sent_ns(), r.first_token_ns());
    // Chunks that one read takes share its receive stamp.
    for (int i = 1; i < 5; ++i) EXPECT_LE(r.chunk_ns(i - 1), r.chunk_ns(i));
    EXPECT_LE(r.chunk_ns(4), r.end_ns());
    EXPECT_TRUE(r.has_load_start());
  }
  ASSERT_EQ(server.heads().size(), 4u);
  EXPECT_THAT(server.heads(), Each(HasSubstr("x-servelab-load: exp-7/formal")));
  EXPECT_THAT(server.heads(), Each(HasSubstr("x-request-id: exp-7/4/2/")));
  EXPECT_THAT(server.bodies(),
              Each(AllOf(HasSubstr("\"model\":\"fake-model\""), HasSubstr("\"max_tokens\":5"),
                         Not(HasSubstr("min_tokens")), HasSubstr("\"ignore_eos\":true"),
                         HasSubstr("\"stream\":true"), HasSubstr("\"include_usage\":true"))));
}

TEST(LoadRunnerTest, RespectsConcurrencyCapAndReusesConnections) {
  FakeServer server;
  auto runner = LoadRunner::Create(Options(server, 3));
  ASSERT_THAT(runner, IsOk());
  MemorySink sink;
  absl::StatusOr<LoadSummary> s = (*runner)->Run(Prompts(24, 4, 4), {}, sink);
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->completed, 24);
  EXPECT_LE(server.max_in_flight(), 3);
  EXPECT_GE(server.max_in_flight(), 2);
  EXPECT_LE(server.connections(), 1 + 3);  // Endpoint check + one per slot, kept alive.
  EXPECT_LE(s->connections_opened, 1 + 3);
}

TEST(LoadRunnerTest, FollowsScheduleAndRecordsQueueTime) {
  FakeServer server;
  server.set_token_gap(absl::Milliseconds(5));
  v1::WorkloadSpec w;
  w.set_request_rate(100);
  w.set_arrival(v1::ARRIVAL_CONSTANT);
  std::vector<int64_t> planned = *PlanArrivals(w, 6);
  // C = 1 and each request takes ~20 ms while one arrives every 10 ms: later
  // arrivals wait for the slot, and that wait is their queued_ns.
  auto runner = LoadRunner::Create(Options(server, 1));
  ASSERT_THAT(runner, IsOk());
  MemorySink sink;
  ASSERT_THAT((*runner)->Run(Prompts(6, 4, 4), planned, sink), IsOk());
  ASSERT_EQ(sink.records().size(), 6u);
  std::vector<v1::RequestRecord> rs = sink.records();
  std::sort(rs.begin(), rs.end(),
            [](auto& a, auto& b) { return a.request_index() < b.request_index(); });
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(rs[i].planned_send_ns(), i * 10'000'000LL);
    EXPECT_GE(rs[i].sent_ns(), rs[i].planned_send_ns());
    EXPECT_GE(rs[i].sent_ns() - rs[i].planned_send_ns(), rs[i].queued_ns());
  }
  EXPECT_LT(rs[0].queued_ns(), 1'000'000);
  EXPECT_GT(rs[5].queued_ns(), 20'000'000);
}

TEST(LoadRunnerTest, Http500IsRecordedAndTheRunCompletes) {
  FakeServer server;
  server.set_mode(FakeServer::Mode::kHttp500);
  for (const auto& r : RunThreeThatFail(Options(server, 2))) {
    EXPECT_EQ(r.http_status(), 500);
    EXPECT_THAT(r.error(), HasSubstr("injected failure"));
    EXPECT_GT(r.end_ns(), 0);
  }
}

TEST(LoadRunnerTest, DroppedStreamAndMissingDoneAreErrors) {
  FakeServer server;
  server.set_mode(FakeServer::Mode::kDropMidStream);
  auto runner = LoadRunner::Create(Options(server, 1));
  MemorySink sink;
  ASSERT_THAT((*runner)->Run(Prompts(2, 4, 6), {}, sink), IsOk());
  for (const auto& r : sink.records()) {
    EXPECT_THAT(r.error(), HasSubstr("stream"));
    EXPECT_EQ(r.chunk_ns_size(), 3);
  }
  server.set_mode(FakeServer::Mode::kNoDone);
  MemorySink sink2;
  ASSERT_THAT((*runner)->Run(Prompts(2, 4, 6), {}, sink2), IsOk());
  for (const auto& r : sink2.records()) EXPECT_THAT(r.error(), HasSubstr("without [DONE]"));
}

// HTTP/1.1 lets a body end with its connection (no length, no chunks): the
// stream is whole, and the next request takes a new connection.
TEST(LoadRunnerTest, ABodyThatEndsWithItsConnectionIsWhole) {
  FakeServer server;
  server.set_mode(FakeServer::Mode::kUntilClose);
  auto runner = LoadRunner::Create(Options(server, 1));
  MemorySink sink;
  ASSERT_THAT((*runner)->Run(Prompts(2, 4, 6), {}, sink), IsOk());
  EXPECT_THAT(sink.records(), Each(AllOf(Property(&v1::RequestRecord::error, ""),
                                         Property(&v1::RequestRecord::chunk_ns_size, 6),
                                         Property(&v1::RequestRecord::completion_tokens, 6))));
  EXPECT_EQ(sink.records().size(), 2u);
  EXPECT_EQ(server.requests(), 2);
}

// The server sends its header and then nothing, or its first token and
// then nothing: each request fails at its timeout, one timer for the whole
// request rather than one per read, so it holds while the body streams.
TEST(LoadRunnerTest, PerRequestTimeout) {
  for (FakeServer::Mode mode : {FakeServer::Mode::kHang, FakeServer::Mode::kHangAfterFirstToken}) {
    SCOPED_TRACE(static_cast<int>(mode));
    FakeServer server;
    server.set_mode(mode);
    LoadOptions o = Options(server, 2);
    o.request_timeout = absl::Milliseconds(200);
    for (const auto& r : RunThreeThatFail(o)) {
      EXPECT_EQ(r.http_status(), 200);
      EXPECT_THAT(r.error(), HasSubstr("timeout"));
      EXPECT_EQ(r.chunk_ns_size(), mode == FakeServer::Mode::kHang ? 0 : 1);
      EXPECT_GE(r.end_ns() - r.sent_ns(), 190'000'000);
    }
    // A timed-out connection is not used again: the model lookup's, the two
    // opened ahead and one for the third request.
    EXPECT_EQ(server.connections(), 4);
  }
}

// A cancel ends bodies that are streaming at once, not at their timeout.
TEST(LoadRunnerTest, CancelEndsBodiesAfterTheirFirstToken) {
  FakeServer server;
  server.set_mode(FakeServer::Mode::kHangAfterFirstToken);
  auto runner = LoadRunner::Create(Options(server, 2));
  ASSERT_THAT(runner, IsOk());
  MemorySink sink;
  std::thread canceller([&] {
    ASSERT_TRUE(servelab::testing::WaitFor([&] { return (*runner)->progress().sent >= 2; },
                                           absl::Seconds(20)));
    absl::SleepFor(absl::Milliseconds(100));  // Both first tokens are in by then.
    (*runner)->Cancel();
  });
  const absl::Time start = absl::Now();
  absl::StatusOr<LoadSummary> s = (*runner)->Run(Prompts(2, 4, 4), {}, sink);
  canceller.join();
  ASSERT_THAT(s, IsOk());
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));  // The timeout is 10 s.
  ASSERT_EQ(sink.records().size(), 2u);
  for (const auto& r : sink.records()) {
    EXPECT_EQ(r.error(), "cancelled");
    EXPECT_EQ(r.chunk_ns_size(), 1);
  }
}

TEST(LoadRunnerTest, UnreachableEndpointSendsNothing) {
  LoadOptions o;
  o.url = absl::StrCat("http://127.0.0.1:", servelab::testing::ClosedLoopbackPort());
  o.concurrency = 4;
  auto runner = LoadRunner::Create(o);
  ASSERT_THAT(runner, IsOk());
  MemorySink sink;
  EXPECT_THAT((*runner)->Run(Prompts(3, 4, 4), {}, sink),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no request was sent")));
  EXPECT_TRUE(sink.records().empty());
}

TEST(LoadRunnerTest, RejectsBadOptions) {
  LoadOptions o;
  o.url = "http://127.0.0.1:1";
  o.concurrency = 0;
  EXPECT_THAT(LoadRunner::Create(o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("concurrency")));
  o.concurrency = 1;
  o.url = "https://x";
  EXPECT_THAT(LoadRunner::Create(o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("https")));
  o.url = "http://127.0.0.1:1";
  for (int priority : {-1, 100}) {
    o.realtime_priority = priority;
    EXPECT_THAT(LoadRunner::Create(o), StatusIs(absl::StatusCode::kInvalidArgument,
                                                HasSubstr("realtime_priority must be 0")));
  }
}

// The io thread runs SCHED_FIFO while the load runs, and its own scheduling
// again once Run returns. Needs the privilege, which CI has (root); the
// refusal without it is servelab_load_test's.
TEST(LoadRunnerTest, TheSendingThreadIsRealtimeForTheRunOnly) {
  if (!CheckRealtimeAllowed(1).ok()) GTEST_SKIP() << "SCHED_FIFO is not permitted here";
  FakeServer server;
  server.set_mode(FakeServer::Mode::kHang);
  LoadOptions options = Options(server, 1);
  options.realtime_priority = 1;
  auto runner = LoadRunner::Create(options);
  ASSERT_THAT(runner, IsOk());
  MemorySink sink;
  int policy_after = -1;
  std::thread io([&] {
    ASSERT_THAT((*runner)->Run(Prompts(1, 4, 2), {}, sink), IsOk());
    sched_param param{};
    pthread_getschedparam(pthread_self(), &policy_after, &param);
  });
  ASSERT_TRUE(servelab::testing::WaitFor([&] { return (*runner)->progress().sent >= 1; },
                                         absl::Seconds(20)));
  int policy_during = -1;
  sched_param during{};
  pthread_getschedparam(io.native_handle(), &policy_during, &during);
  (*runner)->Cancel();
  io.join();
  EXPECT_EQ(policy_during, SCHED_FIFO);
  EXPECT_EQ(during.sched_priority, 1);
  EXPECT_EQ(policy_after, SCHED_OTHER);
  ASSERT_EQ(sink.records().size(), 1u);
  EXPECT_THAT(sink.records()[0].error(), HasSubstr("cancelled"));
}

// The io thread is held up (a signal handler that sleeps, on that thread
// only) while the first token arrives: the record's first token is when the
// bytes reached the socket, not when the thread got to read them, and the
// summary gives the wait apart.
void SleepFor400Ms(int) {
  timespec pause{0, 400'000'000};
  while (nanosleep(&pause, &pause) != 0) {
  }
}

TEST(LoadRunnerTest, AChunksTimeIsWhenItReachedTheSocketNotWhenItWasRead) {
  FakeServer server;
  server.set_token_gap(absl::Milliseconds(300));  // Tokens at 300 and 600 ms.
  auto runner = LoadRunner::Create(Options(server, 1));
  ASSERT_THAT(runner, IsOk());
  struct sigaction stall {
  }, previous{};
  stall.sa_handler = SleepFor400Ms;
  ASSERT_EQ(sigaction(SIGUSR1, &stall, &previous), 0);
  MemorySink sink;
  absl::StatusOr<LoadSummary> s;
  std::thread io([&] { s = (*runner)->Run(Prompts(1, 4, 2), {}, sink); });
  ASSERT_TRUE(servelab::testing::WaitFor([&] { return (*runner)->progress().sent >= 1; },
                                         absl::Seconds(20)));
  absl::SleepFor(absl::Milliseconds(100));    // The header is read; the thread waits.
  pthread_kill(io.native_handle(), SIGUSR1);  // Held up from ~100 to ~500 ms.
  io.join();
  sigaction(SIGUSR1, &previous, nullptr);
  ASSERT_THAT(s, IsOk());
  ASSERT_EQ(sink.records().size(), 1u);
  const v1::RequestRecord& r = sink.records()[0];
  ASSERT_EQ(r.chunk_ns_size(), 2);
  // Read at ~500 ms, when the handler returned; it came at ~300 ms.
  EXPECT_LT(r.first_token_ns() - r.sent_ns(), 450'000'000) << r.DebugString();
  EXPECT_GT(r.chunk_ns(1) - r.chunk_ns(0), 150'000'000) << r.DebugString();
  EXPECT_GE(s->first_token_read_lag_max, absl::Milliseconds(100));
  EXPECT_GE(s->first_token_read_lag_max, s->first_token_read_lag_p50);
}

TEST(LoadRunnerTest, CancelRecordsEveryRequest) {
  FakeServer server;
  server.set_token_gap(absl::Milliseconds(10));
  auto runner = LoadRunner::Create(Options(server, 2));
  ASSERT_THAT(runner, IsOk());
  MemorySink sink;
  std::thread canceller([&] {
    ASSERT_TRUE(servelab::testing::WaitFor([&] { return (*runner)->progress().completed >= 2; },
                                           absl::Seconds(20)));
    (*runner)->Cancel();
  });
  absl::StatusOr<LoadSummary> s = (*runner)->Run(Prompts(40, 4, 5), {}, sink);
  canceller.join();
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(sink.records().size(), 40u);
  EXPECT_GT(s->not_sent, 0);
  EXPECT_EQ(s->sent + s->not_sent, 40);
  int cancelled = 0;
  for (const auto& r : sink.records()) cancelled += absl::StrContains(r.error(), "cancelled");
  EXPECT_EQ(cancelled, s->not_sent + (s->sent - s->completed));
}

TEST(LoadRunnerTest, WritesBatchesWhileRunning) {
  FakeServer server;
  server.set_token_gap(absl::Milliseconds(10));
  LoadOptions o = Options(server, 1);
  o.flush_interval = absl::Milliseconds(20);
  auto runner = LoadRunner::Create(o);
  MemorySink sink;
  ASSERT_THAT((*runner)->Run(Prompts(6, 4, 4), {}, sink), IsOk());  // ~240 ms.
  EXPECT_EQ(sink.records().size(), 6u);
  EXPECT_GE(sink.batches(), 3);
}

class FailingSink : public RecordSink {
 public:
  absl::Status Write(const std::vector<v1::RequestRecord>&) override {
    return absl::InternalError("disk full");
  }
};

TEST(LoadRunnerTest, SinkErrorStopsTheLoad) {
  FakeServer server;
  auto runner = LoadRunner::Create(Options(server, 1));
  FailingSink sink;
  EXPECT_THAT((*runner)->Run(Prompts(400, 4, 4), {}, sink),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("disk full")));
  EXPECT_LT(server.requests(), 400);
}

}  // namespace
}  // namespace servelab::loadgen
