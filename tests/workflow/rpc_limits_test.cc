// The daemon's RPC limits against the real servelabd over its socket (issue
// 10, R3): a request past the 64 MiB limit is refused before anything is
// stored; 10,000 concurrent WatchExperiment streams get exactly
// ServeLabService::kMaxWatches accepted and the rest RESOURCE_EXHAUSTED; the
// accepted watches' clients never read past the first message, and the
// daemon's memory stays bounded while the experiment keeps changing; status
// still answers; a slot freed is a slot reusable.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <fstream>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "servelab/v1/service.grpc.pb.h"
#include "tests/testing/sanitizer.h"
#include "tests/workflow/daemon_fixture.h"

namespace servelab {
namespace {

using testing::RunResult;
using testing::SourcePath;

constexpr int kWatchesTried = 10000;
constexpr int kWatchLimit = 1000;  // ServeLabService::kMaxWatches.

// The resident set of `pid`, in KiB, from /proc.
int64_t RssKib(int pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    int64_t kib = 0;
    if (line.rfind("VmRSS:", 0) == 0 &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::StripSuffix(line.substr(6), "kB")),
                         &kib)) {
      return kib;
    }
  }
  return -1;
}

class RpcLimitsTest : public DaemonFixture {
 protected:
  std::unique_ptr<v1::ServeLab::Stub> Stub() {
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);  // So that the daemon, not the client, refuses.
    return v1::ServeLab::NewStub(
        grpc::CreateCustomChannel(addr_, grpc::InsecureChannelCredentials(), args));
  }

  int64_t StoredExperiments() {
    RunResult count = testing::Run(
        {"/usr/bin/sqlite3", state_dir_ + "/servelab.db", "SELECT count(*) FROM experiments"});
    int64_t n = -1;
    EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(count.out), &n)) << count.err;
    return n;
  }
};

TEST_F(RpcLimitsTest, ARequestPastSixtyFourMebibytesIsRefusedAndNothingIsStored) {
  StartDaemon({"--sim-time-scale", "0.05"});
  std::unique_ptr<v1::ServeLab::Stub> stub = Stub();
  v1::SubmitExperimentRequest request;
  request.set_spec_text(std::string((64 << 20) + 1024, '#'));
  v1::SubmitExperimentResponse reply;
  grpc::ClientContext context;
  grpc::Status status = stub->SubmitExperiment(&context, request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_EQ(StoredExperiments(), 0);
  // The daemon is unharmed: the next request is served.
  RunResult summary = Cli({"summary"});
  EXPECT_EQ(summary.exit_code, 0) << summary.err;
}

TEST_F(RpcLimitsTest, TenThousandWatchesGetTheLimitAndNonReadersKeepMemoryBounded) {
  StartDaemon({"--sim-time-scale", "0.2"});
  // A load long enough to keep changing while the watches are open.
  const std::string id = Submit(
      {"-f", SourcePath("deploy/examples/pd-quick.yaml"), "--set", "workload.num_requests=5000",
       "--set", "workload.dataset.input_tokens=64", "--set", "workload.dataset.output_tokens=256"});
  ASSERT_TRUE(testing::WaitFor([&] { return Status(id).progress().formal_requests_sent() > 0; },
                               absl::Seconds(120)));
  const int64_t rss_before = RssKib(daemon_->pid());

  std::unique_ptr<v1::ServeLab::Stub> stub = Stub();
  grpc::CompletionQueue queue;
  struct Watch {
    grpc::ClientContext context;
    v1::Experiment first;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncReader<v1::Experiment>> reader;
  };
  std::vector<std::unique_ptr<Watch>> watches(kWatchesTried);
  v1::WatchExperimentRequest request;
  request.set_id(id);
  // Tags: 2i = the call started, 2i+1 = its first read.
  for (int i = 0; i < kWatchesTried; ++i) {
    watches[i] = std::make_unique<Watch>();
    watches[i]->reader = stub->AsyncWatchExperiment(&watches[i]->context, request, &queue,
                                                    reinterpret_cast<void*>(intptr_t{2} * i));
  }
  int accepted = 0, refused = 0, events = 0;
  std::vector<bool> read_ok(kWatchesTried, false);
  void* tag = nullptr;
  bool ok = false;
  while (events < 2 * kWatchesTried && queue.Next(&tag, &ok)) {
    ++events;
    const intptr_t t = reinterpret_cast<intptr_t>(tag);
    Watch& w = *watches[t / 2];
    if (t % 2 == 0) {
      w.reader->Read(&w.first, reinterpret_cast<void*>(t + 1));
    } else if (ok) {
      read_ok[t / 2] = true;
      ++accepted;  // And never read again: a client that does not read.
    } else {
      ++refused;
    }
  }
  EXPECT_EQ(accepted, kWatchLimit);
  EXPECT_EQ(refused, kWatchesTried - kWatchLimit);
  for (int i = 0; i < kWatchesTried; ++i) {
    if (read_ok[i]) continue;
    watches[i]->reader->Finish(&watches[i]->status, nullptr);
    ASSERT_TRUE(queue.Next(&tag, &ok));
    EXPECT_EQ(watches[i]->status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(watches[i]->status.error_message().find("at most 1000 watches"), std::string::npos)
        << watches[i]->status.error_message();
  }

  // Status answers while a thousand watches are open and unread, and the
  // experiment keeps committing progress the watches cannot take.
  const int64_t sent_then = Status(id).progress().formal_requests_sent();
  ASSERT_TRUE(testing::WaitFor(
      [&] { return Status(id).progress().formal_requests_sent() > sent_then + 500; },
      absl::Seconds(120)));
  const int64_t rss_open = RssKib(daemon_->pid());
  const int64_t sent_open = Status(id).progress().formal_requests_sent();
  ASSERT_TRUE(testing::WaitFor(
      [&] { return Status(id).progress().formal_requests_sent() > sent_open + 600; },
      absl::Seconds(120)));
  const int64_t rss_later = RssKib(daemon_->pid());
  std::printf(
      "daemon RSS: %lld KiB before, %lld KiB with %d unread watches open, %lld KiB "
      "after 600 more requests\n",
      static_cast<long long>(rss_before), static_cast<long long>(rss_open), kWatchLimit,
      static_cast<long long>(rss_later));
  // A fixed cost per open stream (gRPC's own buffers, about 250 KiB here)...
  EXPECT_LT(rss_open - rss_before, 512 * 1024 * testing::kSanitizerMemoryFactor);
  // ...and flat while progress the watches cannot take keeps being committed
  // (a queue per watch would grow by a snapshot per update).
  EXPECT_LT(rss_later - rss_open, 32 * 1024 * testing::kSanitizerMemoryFactor);

  // Slots come back: cancel the open watches, then a new one is accepted.
  for (int i = 0; i < kWatchesTried; ++i) {
    if (read_ok[i]) watches[i]->context.TryCancel();
  }
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        grpc::ClientContext context;
        std::unique_ptr<grpc::ClientReader<v1::Experiment>> reader =
            stub->WatchExperiment(&context, request);
        v1::Experiment first;
        const bool read = reader->Read(&first);
        context.TryCancel();
        reader->Finish();
        return read;
      },
      absl::Seconds(30)));
  EXPECT_EQ(Cli({"cancel", id}).exit_code, 0);
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
}

}  // namespace
}  // namespace servelab
