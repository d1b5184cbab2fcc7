// servelab-load end to end: the real binary against a real servelab-sim.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "servelab/v1/result.pb.h"
#include "tests/testing/ports.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab {
namespace {

using ::servelab::testing::BinPath;
using ::servelab::testing::FileExists;
using ::servelab::testing::Process;
using ::servelab::testing::ReadFile;
using ::servelab::testing::Run;
using ::servelab::testing::RunResult;
using ::servelab::testing::TempDir;
using ::servelab::testing::WaitFor;
using ::testing::HasSubstr;

// One servelab-sim on a free port with modelled time scaled down.
class Sim {
 public:
  explicit Sim(const TempDir& dir) {
    std::string port_file = dir.File("sim.port");
    process_ = std::make_unique<Process>(
        std::vector<std::string>{BinPath("servelab-sim"), "--role", "unified", "--port", "0",
                                 "--port-file", port_file, "--time-scale", "0.01"},
        dir.File("sim"));
    EXPECT_TRUE(WaitFor([&] { return FileExists(port_file) && !ReadFile(port_file).empty(); },
                        absl::Seconds(20)));
    port_ = std::string(absl::StripAsciiWhitespace(ReadFile(port_file)));
    EXPECT_TRUE(WaitFor(
        [&] {
          return Curl({"-o", "/dev/null", "-w", "%{http_code}", Url("/health")}) == "200";
        },
        absl::Seconds(20)));
  }

  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }
  std::string Url(const std::string& path) const { return url() + path; }
  std::string Curl(std::vector<std::string> args) const {
    args.insert(args.begin(), {"/usr/bin/curl", "-s", "--max-time", "10"});
    return Run(args).out;
  }

 private:
  std::unique_ptr<Process> process_;
  std::string port_;
};

RunResult Load(std::vector<std::string> args) {
  args.insert(args.begin(), BinPath("servelab-load"));
  return Run(args, {}, absl::Seconds(120));
}

v1::Result ParseResult(const std::string& json) {
  v1::Result result;
  auto s = google::protobuf::util::JsonStringToMessage(json, &result);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << json;
  return result;
}

class ServelabLoadFileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ServelabLoadFileTest, ExactLengthsBothWindowsLagAndAnalyzeReproduces) {
  TempDir dir;
  Sim sim(dir);
  std::string out = dir.File("run" + GetParam());
  RunResult r = Load({"--url",
                      sim.url(),
                      "--num-requests",
                      "30",
                      "--concurrency",
                      "6",
                      "--rate",
                      "400",
                      "--arrival",
                      "poisson",
                      "--input-tokens",
                      "128",
                      "--output-tokens",
                      "16",
                      "--seed",
                      "3",
                      "--device-count",
                      "2",
                      "--out",
                      out,
                      "-o",
                      "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::Result result = ParseResult(r.out);
  EXPECT_EQ(result.analyzed_phase(), v1::PHASE_FORMAL);
  EXPECT_EQ(result.exactness().requests(), 30);
  EXPECT_EQ(result.exactness().exact_input(), 30);
  EXPECT_EQ(result.exactness().exact_output(), 30);
  EXPECT_EQ(result.exactness().chunk_count_mismatch(), 0);
  EXPECT_EQ(result.whole().name(), "whole");
  EXPECT_EQ(result.whole().requests_completed(), 30);
  EXPECT_EQ(result.whole().requests_failed(), 0);
  EXPECT_EQ(result.whole().output_tokens(), 30 * 16);
  EXPECT_GT(result.whole().duration_seconds(), 0);
  EXPECT_NEAR(result.whole().output_tokens_per_second_per_device(),
              result.whole().output_tokens_per_second() / 2, 1e-9);
  EXPECT_EQ(result.steady().name(), "steady");
  EXPECT_EQ(result.steady().steady_min_inflight(), 6);
  EXPECT_GE(result.schedule_lag_p99(), result.schedule_lag_p50());
  EXPECT_GT(result.whole().ttft().count(), 0);
  EXPECT_GT(result.whole().itl().count(), 0);

  RunResult again = Load({"analyze", out, "-o", "json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  v1::Result recomputed = ParseResult(again.out);
  result.clear_computed_at();
  recomputed.clear_computed_at();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(result, recomputed))
      << result.DebugString() << "\nvs\n"
      << recomputed.DebugString();
  RunResult text = Load({"analyze", out});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("whole"));
  EXPECT_THAT(text.out, HasSubstr("steady (>=6)"));
  EXPECT_THAT(text.out, HasSubstr("Schedule lag"));
  EXPECT_THAT(text.out, HasSubstr("30/30 exact input, 30/30 exact output"));
}

INSTANTIATE_TEST_SUITE_P(Formats, ServelabLoadFileTest, ::testing::Values(".sqlite", ".jsonl"));

TEST(ServelabLoadTest, SharedPrefixReachesTheTargetHitRatioAndTagsTheLoad) {
  TempDir dir;
  Sim sim(dir);
  RunResult r = Load({"--url", sim.url(), "-n", "12", "-c", "4", "--input-tokens", "256",
                      "--output-tokens", "4", "--prefix-ratio", "0.75", "--prefix-groups", "2",
                      "--load-tag", "exp-9/formal", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::Result result = ParseResult(r.out);
  // The cache-seed phase (one request per group) ran first.
  ASSERT_EQ(result.phases_size(), 2);
  EXPECT_EQ(result.phases(0).phase(), v1::PHASE_CACHE_SEED);
  EXPECT_EQ(result.phases(0).requests(), 2);
  EXPECT_NEAR(result.prefix_cache_hit_ratio(), 0.75, 0.07);
  EXPECT_THAT(sim.Curl({sim.Url("/debug/loads")}), HasSubstr("exp-9/formal"));
}

TEST(ServelabLoadTest, ServerErrorsAreCountedAndTheRunCompletes) {
  TempDir dir;
  Sim sim(dir);
  ASSERT_THAT(
      sim.Curl({"-X", "POST", "-d", R"({"error_fraction": 0.5})", sim.Url("/admin/faults")}),
      HasSubstr("error_fraction"));
  RunResult r = Load({"--url", sim.url(), "-n", "40", "-c", "8", "--input-tokens", "32",
                      "--output-tokens", "4", "--seed", "1", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::Result result = ParseResult(r.out);
  EXPECT_GT(result.whole().requests_failed(), 0);
  EXPECT_GT(result.whole().requests_completed(), 0);
  EXPECT_EQ(result.whole().requests_failed() + result.whole().requests_completed(), 40);
}

struct BadInput {
  std::string name;
  std::vector<std::string> args;
  std::string flag;
};

class ServelabLoadBadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(ServelabLoadBadInputTest, FailsNamingTheFlagAndSendsNothing) {
  TempDir dir;
  Sim sim(dir);
  std::vector<std::string> args = {"--url",           sim.url(), "--num-requests", "4",
                                   "--concurrency",   "2",       "--input-tokens", "16",
                                   "--output-tokens", "4"};
  args.insert(args.end(), GetParam().args.begin(), GetParam().args.end());
  RunResult r = Load(args);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr(GetParam().flag));
  EXPECT_THAT(sim.Curl({sim.Url("/debug/requests")}), HasSubstr("\"requests\":[]"));
}

INSTANTIATE_TEST_SUITE_P(
    Flags, ServelabLoadBadInputTest,
    ::testing::Values(
        BadInput{"ZeroRequests", {"--num-requests", "0"}, "--num-requests"},
        BadInput{"NegativeRequests", {"--num-requests", "-3"}, "--num-requests"},
        BadInput{"ZeroConcurrency", {"--concurrency", "0"}, "--concurrency"},
        BadInput{"NegativeRate", {"--rate", "-1"}, "--rate"},
        BadInput{"ZeroOutput", {"--output-tokens", "0"}, "--output-tokens"},
        BadInput{"PrefixRatioOne", {"--prefix-ratio", "1"}, "--prefix-ratio"},
        BadInput{"PrefixRatioNegative", {"--prefix-ratio", "-0.1"}, "--prefix-ratio"},
        BadInput{"OutFileExists", {"--out", "/"}, "--out"},
        BadInput{"RealtimePriorityAbove99", {"--realtime-priority", "100"}, "--realtime-priority"},
        BadInput{"RealtimePriorityNegative", {"--realtime-priority", "-1"}, "--realtime-priority"}),
    [](const auto& info) { return info.param.name; });

TEST(ServelabLoadTest, UnreachableEndpointIsAClearErrorWithNothingSent) {
  TempDir dir;
  std::string out = dir.File("r.jsonl");
  const std::string url =
      absl::StrCat("http://127.0.0.1:", servelab::testing::ClosedLoopbackPort());
  RunResult r = Load({"--url", url, "-n", "3", "-c", "1", "--input-tokens", "8", "--output-tokens",
                      "2", "--out", out});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--url"));
  EXPECT_THAT(r.err, HasSubstr("no request was sent"));
  // The record file holds the spec line and no record.
  EXPECT_THAT(ReadFile(out), ::testing::Not(HasSubstr("sent_ns")));
}

// Without the privilege a real-time run is refused before anything is sent
// or stored.
TEST(ServelabLoadTest, RealtimeWithoutThePrivilegeIsRefusedBeforeAnything) {
  TempDir dir;
  Sim sim(dir);
  const std::string out = dir.File("r.sqlite");
  RunResult r = servelab::testing::Run(servelab::testing::WithoutRealtimePrivilege(
      {BinPath("servelab-load"), "--url", sim.url(), "-n", "4", "-c", "2", "--input-tokens", "8",
       "--output-tokens", "2", "--realtime-priority", "1", "--out", out}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--realtime-priority: SCHED_FIFO priority 1 refused"));
  EXPECT_THAT(r.err, HasSubstr("CAP_SYS_NICE"));
  EXPECT_FALSE(FileExists(out));
  EXPECT_THAT(sim.Curl({sim.Url("/debug/requests")}), HasSubstr("\"requests\":[]"));
}

TEST(ServelabLoadTest, RealtimeRunCompletesWhenPermitted) {
  if (geteuid() != 0) GTEST_SKIP() << "SCHED_FIFO needs root here";
  TempDir dir;
  Sim sim(dir);
  RunResult r = Load({"--url", sim.url(), "-n", "6", "-c", "3", "--input-tokens", "8",
                      "--output-tokens", "3", "--realtime-priority", "1", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ParseResult(r.out).whole().requests_completed(), 6);
}

TEST(ServelabLoadTest, AnalyzeOfAMissingFileFails) {
  RunResult r = Load({"analyze", "/nonexistent/run.sqlite"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/run.sqlite"));
}

}  // namespace
}  // namespace servelab
