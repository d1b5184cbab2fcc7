// The real binaries end to end: servelabd on a temp state dir, driven by the
// servelab CLI. Assertions are on exit codes, gRPC code names, field paths
// and the JSON the CLI prints — never on whole messages or log text.
#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "servelab/v1/experiment.pb.h"
#include "servelab/v1/service.pb.h"
#include "tests/daemon/http_get.h"
#include "tests/testing/certificate.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab {
namespace {

using ::servelab::testing::BinPath;
using ::servelab::testing::MakeCertificate;
using ::servelab::testing::Process;
using ::servelab::testing::ReadFile;
using ::servelab::testing::RunResult;
using ::servelab::testing::SourcePath;
using ::servelab::testing::WaitFor;
using ::testing::HasSubstr;
using ::testing::Not;

// Exit codes of client/exit_codes.h (the test does not link the client).
constexpr int kExitUsage = 2;
constexpr int kExitInvalidArgument = 3;
constexpr int kExitNotFound = 4;
constexpr int kExitFailedPrecondition = 5;
constexpr int kExitUnavailable = 6;
constexpr int kExitDeadlineExceeded = 7;
constexpr int kExitNotReached = 8;

std::string Example(const std::string& name) { return SourcePath("deploy/examples/" + name); }

std::string Trimmed(std::string s) {
  absl::StripTrailingAsciiWhitespace(&s);
  return s;
}

template <typename Message>
Message ParseJson(const std::string& json) {
  Message message;
  auto status = google::protobuf::util::JsonStringToMessage(json, &message);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json;
  return message;
}

class CliIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override { state_dir_ = dir_.File("state"); }

  // Starts servelabd and waits until it wrote its address (it is SERVING then).
  std::unique_ptr<Process> StartDaemon(const std::vector<std::string>& extra = {}) {
    unlink((state_dir_ + "/servelabd.addr").c_str());
    // Paused: these tests are about the control plane; nothing is launched.
    std::vector<std::string> argv = {BinPath("servelabd"), "--state-dir", state_dir_, "--paused"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto daemon = std::make_unique<Process>(argv, dir_.File(absl::StrCat("servelabd", ++starts_)));
    bool up = WaitFor(
        [&] { return testing::FileExists(state_dir_ + "/servelabd.addr") || !daemon->Running(); },
        absl::Seconds(30));
    EXPECT_TRUE(up && daemon->Running()) << DaemonLog();
    addr_ = Trimmed(ReadFile(state_dir_ + "/servelabd.addr"));
    return daemon;
  }

  std::string DaemonLog() {
    return ReadFile(dir_.File(absl::StrCat("servelabd", starts_, ".err")));
  }

  RunResult Cli(std::vector<std::string> args) {
    args.insert(args.begin(), {BinPath("servelab"), "--addr", addr_});
    return testing::Run(args);
  }

  // Submits and returns the experiment the CLI printed as JSON.
  v1::Experiment SubmitJson(std::vector<std::string> args) {
    args.insert(args.begin(), "submit");
    args.insert(args.end(), {"-o", "json"});
    RunResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return ParseJson<v1::Experiment>(r.out);
  }

  v1::Experiment StatusJson(const std::string& id) {
    RunResult r = Cli({"status", id, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return ParseJson<v1::Experiment>(r.out);
  }

  std::string ListJson() {
    RunResult r = Cli({"list", "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  // A copy of an example with `from` replaced by `to`, its relative file
  // references made absolute so that only the intended fault remains.
  std::string WriteVariant(const std::string& example, const std::string& from,
                           const std::string& to) {
    std::string text = ReadFile(Example(example));
    EXPECT_THAT(text, HasSubstr(from)) << example;
    text = absl::StrReplaceAll(text, {{from, to}});
    text = absl::StrReplaceAll(
        text, {{"expert_layout: layouts/", "expert_layout: " + Example("layouts/")}});
    std::string path = dir_.File(absl::StrCat("variant", ++variants_, ".yaml"));
    testing::WriteFile(path, text);
    return path;
  }

  testing::TempDir dir_;
  std::string state_dir_;
  std::string addr_;
  int starts_ = 0;
  int variants_ = 0;
};

TEST_F(CliIntegrationTest, SubmitDeltaStatusAndRestart) {
  auto daemon = StartDaemon();
  v1::Experiment base = SubmitJson({"-f", Example("16k-nocache.yaml")});
  ASSERT_FALSE(base.id().empty());
  EXPECT_EQ(base.state(), v1::EXPERIMENT_STATE_QUEUED);
  EXPECT_TRUE(base.base_id().empty());

  v1::Experiment delta = SubmitJson({"--base", base.id(), "--set", "workload.concurrency=96"});
  EXPECT_EQ(delta.base_id(), base.id());
  ASSERT_EQ(delta.changes_size(), 1);
  EXPECT_EQ(delta.changes(0).path(), "workload.concurrency");
  EXPECT_EQ(delta.changes(0).old_value(), "128");
  EXPECT_EQ(delta.changes(0).new_value(), "96");
  EXPECT_NE(delta.spec_sha256(), base.spec_sha256());

  // The JSON keeps proto field names and enum names.
  RunResult raw = Cli({"status", delta.id(), "-o", "json"});
  EXPECT_THAT(raw.out, HasSubstr("\"base_id\""));
  EXPECT_THAT(raw.out, HasSubstr("\"EXPERIMENT_STATE_QUEUED\""));
  v1::Experiment base_before = StatusJson(base.id());
  v1::Experiment delta_before = StatusJson(delta.id());
  EXPECT_EQ(delta_before.spec().workload().concurrency(), 96);

  // Human status: the facts first.
  RunResult text = Cli({"status", delta.id()});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("queued"));
  EXPECT_THAT(text.out, HasSubstr("0 sent / 640 planned"));
  EXPECT_THAT(text.out, HasSubstr("workload.concurrency: 128 → 96"));

  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(), 0) << DaemonLog();
  EXPECT_FALSE(testing::FileExists(state_dir_ + "/servelab.sock"));
  RunResult down = Cli({"list"});
  EXPECT_EQ(down.exit_code, kExitUnavailable);
  EXPECT_THAT(down.err, HasSubstr("error: UNAVAILABLE:"));
  EXPECT_THAT(down.err, HasSubstr(addr_));

  daemon = StartDaemon();
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(StatusJson(base.id()), base_before));
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(StatusJson(delta.id()), delta_before));
  auto list = ParseJson<v1::ListExperimentsResponse>(ListJson());
  ASSERT_EQ(list.experiments_size(), 2);
  EXPECT_EQ(list.experiments(0).id(), base.id());
  EXPECT_EQ(list.experiments(1).id(), delta.id());

  RunResult lines = Cli({"list"});
  EXPECT_EQ(lines.exit_code, 0);
  EXPECT_THAT(lines.out, HasSubstr(base.id()));
  EXPECT_THAT(lines.out, HasSubstr("16k-nocache"));
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(), 0);
}

TEST_F(CliIntegrationTest, OneDaemonPerStateDirAndOwnerOnlySocket) {
  auto daemon = StartDaemon();
  struct stat st;
  ASSERT_EQ(stat((state_dir_ + "/servelab.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  ASSERT_EQ(stat(state_dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700);

  RunResult second = testing::Run({BinPath("servelabd"), "--state-dir", state_dir_});
  EXPECT_NE(second.exit_code, 0);
  EXPECT_THAT(second.err, HasSubstr(absl::StrCat("pid ", daemon->pid())));
  // The first one is unharmed.
  EXPECT_TRUE(daemon->Running());
  EXPECT_EQ(Cli({"list"}).exit_code, 0);
}

TEST_F(CliIntegrationTest, LoopbackTcpAndRefusedRemote) {
  auto daemon = StartDaemon({"--listen", "tcp:127.0.0.1:0"});
  EXPECT_THAT(addr_, ::testing::StartsWith("tcp:127.0.0.1:"));
  EXPECT_EQ(Cli({"list"}).exit_code, 0);

  testing::TempDir other;
  RunResult remote = testing::Run(
      {BinPath("servelabd"), "--state-dir", other.path(), "--listen", "tcp:0.0.0.0:0"});
  EXPECT_NE(remote.exit_code, 0);
  EXPECT_THAT(remote.err, HasSubstr("--allow-remote"));
}

// A real-time load priority is checked when the daemon starts, not when an
// experiment's first load would fail: out of range or not permitted, the
// daemon refuses to start and creates nothing.
TEST_F(CliIntegrationTest, LoadRealtimePriorityIsCheckedAtStart) {
  testing::TempDir other;
  const std::string other_state = other.File("state");
  RunResult above = testing::Run(
      {BinPath("servelabd"), "--state-dir", other_state, "--load-realtime-priority", "100"});
  EXPECT_NE(above.exit_code, 0);
  EXPECT_THAT(above.err, HasSubstr("--load-realtime-priority: must be 0"));
  RunResult refused = testing::Run(testing::WithoutRealtimePrivilege(
      {BinPath("servelabd"), "--state-dir", other_state, "--load-realtime-priority", "1"}));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("--load-realtime-priority: SCHED_FIFO priority 1 refused"));
  EXPECT_FALSE(testing::FileExists(other_state));
  if (geteuid() != 0) GTEST_SKIP() << "SCHED_FIFO needs root here";
  auto daemon = StartDaemon({"--load-realtime-priority", "1"});
  EXPECT_EQ(Cli({"list"}).exit_code, 0);
}

TEST_F(CliIntegrationTest, TlsOnTcpNeedsTheCaAndRemoteNeedsTls) {
  const std::string cert = dir_.File("cert.pem"), key = dir_.File("key.pem");
  ASSERT_NO_FATAL_FAILURE(MakeCertificate(cert, key));
  auto daemon = StartDaemon({"--listen", "tcp:127.0.0.1:0", "--tls-cert", cert, "--tls-key", key});
  EXPECT_EQ(Cli({"--tls-ca", cert, "list"}).exit_code, 0);
  RunResult from_env =
      testing::Run({BinPath("servelab"), "--addr", addr_, "list"}, {"SERVELAB_TLS_CA=" + cert});
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  // Plain text gets no answer from a TLS port.
  RunResult plain = Cli({"list"});
  EXPECT_EQ(plain.exit_code, kExitUnavailable);
  RunResult no_ca = Cli({"--tls-ca", dir_.File("missing.pem"), "list"});
  EXPECT_EQ(no_ca.exit_code, kExitUsage);
  EXPECT_THAT(no_ca.err, HasSubstr("--tls-ca"));

  // Off the host, TLS is required even with --allow-remote; a refused start
  // leaves no state dir behind.
  testing::TempDir other;
  const std::string other_state = other.File("state");
  RunResult remote = testing::Run({BinPath("servelabd"), "--state-dir", other_state, "--listen",
                                   "tcp:0.0.0.0:0", "--allow-remote"});
  EXPECT_NE(remote.exit_code, 0);
  EXPECT_THAT(remote.err, HasSubstr("--tls-cert"));
  RunResult half = testing::Run({BinPath("servelabd"), "--state-dir", other_state, "--listen",
                                 "tcp:127.0.0.1:0", "--tls-cert", cert});
  EXPECT_NE(half.exit_code, 0);
  EXPECT_THAT(half.err, HasSubstr("--tls-key"));
  RunResult not_pem =
      testing::Run({BinPath("servelabd"), "--state-dir", other_state, "--listen", "tcp:127.0.0.1:0",
                    "--tls-cert", cert, "--tls-key", Example("16k-nocache.yaml")});
  EXPECT_NE(not_pem.exit_code, 0);
  EXPECT_THAT(not_pem.err, HasSubstr("not a PEM file"));
  RunResult on_unix = testing::Run(
      {BinPath("servelabd"), "--state-dir", other_state, "--tls-cert", cert, "--tls-key", key});
  EXPECT_NE(on_unix.exit_code, 0);
  EXPECT_THAT(on_unix.err, HasSubstr("tcp:"));
  EXPECT_FALSE(testing::FileExists(other_state));
}

// curl with `args`; its stdout is the HTTP code ("000" when no HTTP answer
// came), the body goes where -o says.
RunResult Curl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/curl", "-sS", "-m", "10", "-w", "%{http_code}"};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::Run(argv);
}

// /metrics off the host is served over HTTPS only, with the daemon's
// certificate, while gRPC stays on the owner-only unix socket.
TEST_F(CliIntegrationTest, MetricsOffTheHostAreHttpsOnly) {
  const std::string cert = dir_.File("cert.pem"), key = dir_.File("key.pem");
  ASSERT_NO_FATAL_FAILURE(MakeCertificate(cert, key));
  testing::TempDir other;
  const std::string other_state = other.File("state");
  RunResult plain_remote = testing::Run({BinPath("servelabd"), "--state-dir", other_state,
                                         "--metrics-listen", "0.0.0.0:0", "--allow-remote"});
  EXPECT_NE(plain_remote.exit_code, 0);
  EXPECT_THAT(plain_remote.err, HasSubstr("--metrics-listen 0.0.0.0:0 is not loopback"));
  EXPECT_THAT(plain_remote.err, HasSubstr("--tls-cert"));
  RunResult tls_for_nothing =
      testing::Run({BinPath("servelabd"), "--state-dir", other_state, "--metrics-listen",
                    "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key});
  EXPECT_NE(tls_for_nothing.exit_code, 0);
  EXPECT_THAT(tls_for_nothing.err, HasSubstr("non-loopback --metrics-listen"));
  EXPECT_FALSE(testing::FileExists(other_state));

  // 0.0.0.0 is not loopback; the test still reaches it on 127.0.0.1 only.
  auto daemon = StartDaemon(
      {"--metrics-listen", "0.0.0.0:0", "--allow-remote", "--tls-cert", cert, "--tls-key", key});
  EXPECT_THAT(DaemonLog(), HasSubstr("serving /metrics on https://0.0.0.0:"));
  SubmitJson({"-f", Example("16k-nocache.yaml")});
  const std::string metrics_addr = Trimmed(ReadFile(state_dir_ + "/servelabd.metrics.addr"));
  const std::string url =
      absl::StrCat("https://127.0.0.1:", metrics_addr.substr(metrics_addr.rfind(':') + 1));
  const std::string body = dir_.File("scrape.txt");
  RunResult scrape = Curl({"--cacert", cert, "-o", body, url + "/metrics"});
  EXPECT_EQ(scrape.out, "200") << scrape.err;
  EXPECT_THAT(ReadFile(body), HasSubstr("servelab_experiments{state=\"queued\"} 1"));
  EXPECT_EQ(Curl({"--cacert", cert, "-o", "/dev/null", url + "/other"}).out, "404");
  EXPECT_EQ(Curl({"--cacert", cert, "-o", "/dev/null", "-X", "POST", url + "/metrics"}).out, "405");
  // Plain HTTP, an unverified certificate and TLS 1.1 get no HTTP answer.
  const std::string plain_url = "http" + url.substr(5) + "/metrics";
  EXPECT_EQ(Curl({"-o", "/dev/null", plain_url}).out, "000");
  EXPECT_EQ(Curl({"-o", "/dev/null", url + "/metrics"}).out, "000");
  EXPECT_EQ(Curl({"--cacert", cert, "--tls-max", "1.1", "-o", "/dev/null", url + "/metrics"}).out,
            "000");
  // The daemon serves on after the refused connections, and a client that
  // connects and never speaks does not hold up a scrape.
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(metrics_addr.substr(metrics_addr.rfind(':') + 1), &port));
  const int idle = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in loopback{};
  loopback.sin_family = AF_INET;
  loopback.sin_port = htons(static_cast<uint16_t>(port));
  loopback.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(idle, reinterpret_cast<sockaddr*>(&loopback), sizeof(loopback)), 0);
  EXPECT_EQ(Curl({"--cacert", cert, "-o", "/dev/null", url + "/metrics"}).out, "200");
  close(idle);
  EXPECT_EQ(Cli({"list"}).exit_code, 0);
}

// The socket's mode is loosened by hand; a client running as another user
// still gets no answer, and nothing it sent is stored.
TEST_F(CliIntegrationTest, AnotherUserIsRefusedOnTheSocket) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run the CLI as another user (setpriv)";
  if (!testing::FileExists("/usr/bin/setpriv")) GTEST_SKIP() << "setpriv (util-linux) missing";
  auto daemon = StartDaemon();
  // The temp dirs are owner-only; let uid 65534 reach the socket and the spec.
  for (const std::string& path : {dir_.path(), state_dir_}) chmod(path.c_str(), 0711);
  chmod((state_dir_ + "/servelab.sock").c_str(), 0666);
  const std::string spec = dir_.File("spec.yaml");
  testing::WriteFile(spec, ReadFile(Example("16k-nocache.yaml")));
  chmod(spec.c_str(), 0644);
  RunResult other =
      testing::Run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                    BinPath("servelab"), "--addr", addr_, "submit", "-f", spec});
  EXPECT_EQ(other.exit_code, kExitUnavailable) << other.out << other.err;
  EXPECT_THAT(ListJson(), Not(HasSubstr("exp-")));
  // The daemon's own user is still served.
  EXPECT_EQ(Cli({"list"}).exit_code, 0);
}

TEST_F(CliIntegrationTest, MetricsEndpoint) {
  auto daemon = StartDaemon({"--metrics-listen", "127.0.0.1:0"});
  SubmitJson({"-f", Example("16k-nocache.yaml")});
  std::string metrics_addr = Trimmed(ReadFile(state_dir_ + "/servelabd.metrics.addr"));
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(metrics_addr.substr(metrics_addr.rfind(':') + 1), &port))
      << metrics_addr;
  std::string scrape = testing::HttpGet("127.0.0.1", port, "/metrics");
  EXPECT_THAT(scrape, HasSubstr("servelab_experiments{state=\"queued\"} 1"));
  EXPECT_THAT(scrape, HasSubstr("method=\"SubmitExperiment\""));
}

TEST_F(CliIntegrationTest, PlanStoresNothing) {
  auto daemon = StartDaemon();
  v1::Experiment base = SubmitJson({"-f", Example("128k-cache90.yaml")});
  std::string before = ListJson();
  RunResult plan = Cli({"plan", "--base", base.id(), "--set", "workload.concurrency=90"});
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("nothing stored"));
  EXPECT_THAT(plan.out, HasSubstr("workload.concurrency"));
  RunResult plan_json = Cli({"plan", "-f", Example("16k-nocache.yaml"), "-o", "json"});
  EXPECT_EQ(plan_json.exit_code, 0) << plan_json.err;
  EXPECT_TRUE(ParseJson<v1::Experiment>(plan_json.out).id().empty());
  EXPECT_EQ(ListJson(), before);
}

TEST_F(CliIntegrationTest, CompareShowsTheFrozenSpecDifferences) {
  auto daemon = StartDaemon();
  v1::Experiment base = SubmitJson({"-f", Example("16k-nocache.yaml")});
  v1::Experiment delta = SubmitJson({"--base", base.id(), "--set", "workload.concurrency=96"});
  RunResult compare = Cli({"compare", base.id(), delta.id()});
  EXPECT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_THAT(compare.out, ::testing::ContainsRegex("workload.concurrency +128 +96"));
  EXPECT_THAT(compare.out, HasSubstr("results (whole / steady window)"));
  RunResult json = Cli({"compare", base.id(), delta.id(), "-o", "json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(ParseJson<v1::ListExperimentsResponse>(json.out).experiments_size(), 2);

  const std::string before = ListJson();
  RunResult one = Cli({"compare", base.id()});
  EXPECT_EQ(one.exit_code, kExitUsage);
  EXPECT_THAT(one.err, HasSubstr("at least two"));
  RunResult unknown = Cli({"compare", base.id(), "exp-999"});
  EXPECT_EQ(unknown.exit_code, kExitNotFound);
  EXPECT_THAT(unknown.err, HasSubstr("exp-999"));
  EXPECT_EQ(ListJson(), before);
}

TEST_F(CliIntegrationTest, WatchWaitAndCancel) {
  auto daemon = StartDaemon();
  v1::Experiment e = SubmitJson({"-f", Example("16k-nocache.yaml")});

  // Nothing runs queued experiments yet: waiting for "sent" times out.
  RunResult timeout = Cli({"wait", e.id(), "--until", "sent", "--timeout", "1s"});
  EXPECT_EQ(timeout.exit_code, kExitDeadlineExceeded) << timeout.err;
  EXPECT_THAT(timeout.err, HasSubstr("DEADLINE_EXCEEDED"));

  Process watch({BinPath("servelab"), "--addr", addr_, "watch", e.id(), "-o", "json"},
                dir_.File("watch"));
  ASSERT_TRUE(
      WaitFor([&] { return !ReadFile(dir_.File("watch.out")).empty(); }, absl::Seconds(20)));
  RunResult cancel = Cli({"cancel", e.id()});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_THAT(cancel.out, HasSubstr("cancelled"));
  EXPECT_EQ(watch.Wait(absl::Seconds(20)), 0) << ReadFile(dir_.File("watch.err"));
  std::string lines = ReadFile(dir_.File("watch.out"));
  EXPECT_THAT(lines, HasSubstr("EXPERIMENT_STATE_QUEUED"));
  EXPECT_THAT(lines, HasSubstr("EXPERIMENT_STATE_CANCELLED"));

  RunResult done = Cli({"wait", e.id(), "--until", "done"});
  EXPECT_EQ(done.exit_code, kExitNotReached) << done.err;
  EXPECT_THAT(done.err, HasSubstr("cancelled"));
  RunResult again = Cli({"cancel", e.id()});
  EXPECT_EQ(again.exit_code, kExitFailedPrecondition) << again.err;
  EXPECT_THAT(again.err, HasSubstr("error: FAILED_PRECONDITION:"));
}

TEST_F(CliIntegrationTest, SigtermEndsOpenWatches) {
  auto daemon = StartDaemon();
  v1::Experiment e = SubmitJson({"-f", Example("16k-nocache.yaml")});
  Process watch({BinPath("servelab"), "--addr", addr_, "watch", e.id()}, dir_.File("watch"));
  ASSERT_TRUE(
      WaitFor([&] { return !ReadFile(dir_.File("watch.out")).empty(); }, absl::Seconds(20)));
  absl::Time before = absl::Now();
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(), 0);
  EXPECT_LT(absl::Now() - before, absl::Seconds(4)) << "shutdown waited for the watch";
  EXPECT_EQ(watch.Wait(absl::Seconds(20)), kExitUnavailable);
  EXPECT_THAT(ReadFile(dir_.File("watch.err")), HasSubstr("shutting down"));
}

struct BadInput {
  std::string name;
  // Builds the CLI arguments; `base` is a stored experiment's id.
  using Args =
      std::function<std::vector<std::string>(CliIntegrationTest&, const std::string& base)>;
  Args args;
  int exit_code;
  std::string code_name;
  std::string path;  // Must appear in stderr.
  // Another acceptable outcome, when there is one.
  int alt_exit_code = -1;
  std::string alt_code_name;
};

class BadInputTest : public CliIntegrationTest {
 public:
  using CliIntegrationTest::WriteVariant;

 protected:
  // Submits the example with `from` replaced by `to`.
  static BadInput::Args Variant(std::string from, std::string to) {
    return [from, to](CliIntegrationTest& t, const std::string&) {
      return std::vector<std::string>{
          "submit", "-f", static_cast<BadInputTest&>(t).WriteVariant("16k-nocache.yaml", from, to)};
    };
  }
  // Submits a delta on the stored experiment.
  static BadInput::Args Delta(std::vector<std::string> sets) {
    return [sets](CliIntegrationTest&, const std::string& base) {
      std::vector<std::string> args = {"submit", "--base", base};
      for (const auto& s : sets) args.insert(args.end(), {"--set", s});
      return args;
    };
  }

  // Each case: the exit code, `error: CODE:`, the field path in stderr, and
  // the list of experiments unchanged (nothing stored).
  void RunCatalogue(const std::vector<BadInput>& cases, const std::string& base,
                    const std::string& before) {
    for (const BadInput& c : cases) {
      SCOPED_TRACE(c.name);
      RunResult r = Cli(c.args(*this, c.name == "unknown base id" ? "exp-999" : base));
      if (c.alt_exit_code != -1 && r.exit_code == c.alt_exit_code) {
        EXPECT_THAT(r.err, HasSubstr("error: " + c.alt_code_name + ":"));
      } else {
        EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
        EXPECT_THAT(r.err, HasSubstr("error: " + c.code_name + ":"));
      }
      EXPECT_THAT(r.err, HasSubstr(c.path));
      EXPECT_EQ(ListJson(), before);
    }
    std::printf("bad-input catalogue: %zu cases refused, nothing stored\n", cases.size());
  }
};

TEST_F(BadInputTest, EachIsRefusedClearlyAndNothingIsStored) {
  auto daemon = StartDaemon();
  v1::Experiment base = SubmitJson({"-f", Example("16k-nocache.yaml")});
  const std::vector<BadInput> cases = {
      {"unknown field", Variant("  concurrency: 128", "  concurency: 128"), kExitInvalidArgument,
       "INVALID_ARGUMENT", "workload.concurency"},
      {"wrong type", Variant("concurrency: 128", "concurrency: lots"), kExitInvalidArgument,
       "INVALID_ARGUMENT", "workload.concurrency"},
      {"num_requests 0", Variant("num_requests: 640", "num_requests: 0"), kExitInvalidArgument,
       "INVALID_ARGUMENT", "workload.num_requests"},
      {"num_requests negative", Variant("num_requests: 640", "num_requests: -5"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "workload.num_requests"},
      {"concurrency 0", Variant("concurrency: 128", "concurrency: 0"), kExitInvalidArgument,
       "INVALID_ARGUMENT", "workload.concurrency"},
      {"negative request_rate", Variant("request_rate: 6", "request_rate: -1"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "workload.request_rate"},
      {"malformed YAML", Variant("workload:\n", "workload: [unclosed\n"), kExitInvalidArgument,
       "INVALID_ARGUMENT", "variant"},
      // The issue allows either code for a file the spec names but that is missing.
      {"missing referenced file",
       Variant("layouts/decode-layout-a.json", "layouts/no-such-layout.json"), kExitNotFound,
       "NOT_FOUND", "deployment.decode.expert_layout", kExitInvalidArgument, "INVALID_ARGUMENT"},
      {"unknown base id", Delta({"workload.concurrency=96"}), kExitNotFound, "NOT_FOUND",
       "exp-999"},
      {"--set on a missing path", Delta({"workload.concurency=96"}), kExitInvalidArgument,
       "INVALID_ARGUMENT", "workload.concurency"},
      {"--set with a wrong type", Delta({"workload.concurrency=many"}), kExitInvalidArgument,
       "INVALID_ARGUMENT", "workload.concurrency"},
      {"--set concurrency 0", Delta({"workload.concurrency=0"}), kExitInvalidArgument,
       "INVALID_ARGUMENT", "workload.concurrency"},
      {"a secret's value in env", Delta({"deployment.prefill.env.HF_TOKEN=hf_x"}),
       kExitInvalidArgument, "INVALID_ARGUMENT", "deployment.prefill.env.HF_TOKEN"},
      {"pass_env not a variable name", Delta({"deployment.decode.pass_env=[\"1BAD\"]"}),
       kExitInvalidArgument, "INVALID_ARGUMENT", "deployment.decode.pass_env[0]"},
      {"--unset on a missing path",
       [](CliIntegrationTest&, const std::string& base) {
         return std::vector<std::string>{"submit", "--base", base, "--unset", "workload.nope"};
       },
       kExitInvalidArgument, "INVALID_ARGUMENT", "workload.nope"},
  };
  const std::string before = ListJson();
  RunCatalogue(cases, base.id(), before);

  // Errors the CLI finds itself.
  RunResult unreadable = Cli({"submit", "-f", dir_.File("does-not-exist.yaml")});
  EXPECT_EQ(unreadable.exit_code, kExitUsage);
  EXPECT_THAT(unreadable.err, HasSubstr("does-not-exist.yaml"));
  RunResult no_source = Cli({"submit"});
  EXPECT_EQ(no_source.exit_code, kExitUsage);
  RunResult bad_flag = Cli({"submit", "--bogus"});
  EXPECT_EQ(bad_flag.exit_code, kExitUsage);
  RunResult unknown_id = Cli({"status", "exp-999"});
  EXPECT_EQ(unknown_id.exit_code, kExitNotFound);
  EXPECT_THAT(unknown_id.err, HasSubstr("error: NOT_FOUND:"));
  EXPECT_EQ(ListJson(), before);
}

// The rest of issue 10's R3 catalogue: numbers that overflow or are not
// numbers, duplicate keys, unknown enum values, YAML that expands or nests
// without end, files that are not regular files or are too large, text that
// is not UTF-8, ids that are not ids. Each is refused with its code and the
// field at fault, and nothing is stored.
TEST_F(BadInputTest, TheCatalogueOfHostileInputIsRefusedAndNothingIsStored) {
  auto daemon = StartDaemon();
  v1::Experiment base = SubmitJson({"-f", Example("16k-nocache.yaml")});
  auto args = [](std::vector<std::string> fixed) {
    return [fixed](CliIntegrationTest&, const std::string&) { return fixed; };
  };
  // Files that are not what a spec may reference or be.
  const std::string fifo = dir_.File("layout.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string zero = dir_.File("layout-zero.json");
  ASSERT_EQ(symlink("/dev/zero", zero.c_str()), 0);
  const std::string directory = dir_.File("layout-dir.json");
  ASSERT_EQ(mkdir(directory.c_str(), 0700), 0);
  const std::string huge = dir_.File("huge.json");  // Sparse: 5 GiB, no disk used.
  ASSERT_EQ(truncate((testing::WriteFile(huge, ""), huge).c_str(), int64_t{5} << 30), 0);
  const std::string big_spec = dir_.File("big.yaml");
  testing::WriteFile(big_spec, ReadFile(Example("16k-nocache.yaml")) + "# " +
                                   std::string(size_t{5} << 20, 'x') + "\n");
  const std::string latin1 = dir_.File("latin1.yaml");
  testing::WriteFile(latin1, absl::StrReplaceAll(ReadFile(Example("16k-nocache.yaml")),
                                                 {{"owner: perf-team", "owner: \"caf\xe9\""}}));
  std::string bomb = "[&a0 [x,x,x,x,x,x,x,x,x]";
  for (int i = 1; i < 9; ++i) {
    bomb += absl::StrCat(", &a", i, " [",
                         absl::StrJoin(std::vector<std::string>(9, absl::StrCat("*a", i - 1)), ","),
                         "]");
  }
  bomb += "]";
  const std::string deep = std::string(10000, '[') + std::string(10000, ']');
  const std::string layout = "expert_layout: layouts/decode-layout-a.json";

  const std::vector<BadInput> cases = {
      // Numbers.
      {"NaN", Variant("request_rate: 6", "request_rate: .nan"), kExitInvalidArgument,
       "INVALID_ARGUMENT", "workload.request_rate"},
      {"inf", Variant("request_rate: 6", "request_rate: .inf"), kExitInvalidArgument,
       "INVALID_ARGUMENT", "workload.request_rate"},
      {"-inf", Variant("tpot: 100ms", "tpot: -.inf"), kExitInvalidArgument, "INVALID_ARGUMENT",
       "analysis.slo.tpot"},
      {"int32 overflow", Variant("num_requests: 640", "num_requests: 2147483648"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "workload.num_requests"},
      {"too many requests", Variant("num_requests: 640", "num_requests: 20000000"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "workload.num_requests"},
      {"num_requests x input_tokens", Variant("num_requests: 640", "num_requests: 9000000"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "workload.num_requests"},
      {"negative duration", Variant("formal_deadline: 20m", "formal_deadline: -20m"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "limits.formal_deadline"},
      {"not a duration", Variant("formal_deadline: 20m", "formal_deadline: 20 parsecs"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "limits.formal_deadline"},
      {"negative SLO", Variant("ttft: 10s", "ttft: -10s"), kExitInvalidArgument, "INVALID_ARGUMENT",
       "analysis.slo.ttft"},
      {"fraction over 1",
       Variant("max_num_seqs: 128", "max_num_seqs: 128\n    gpu_memory_utilization: 1.5"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "deployment.prefill.gpu_memory_utilization"},
      {"port out of range", Variant("max_num_seqs: 128", "max_num_seqs: 128\n    port: 70000"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "deployment.prefill.port"},
      {"negative device", Variant("devices: [0, 1,", "devices: [-1, 1,"), kExitInvalidArgument,
       "INVALID_ARGUMENT", "deployment.prefill.devices"},
      {"device twice", Variant("devices: [0, 1,", "devices: [0, 0,"), kExitInvalidArgument,
       "INVALID_ARGUMENT", "deployment.prefill.devices"},
      {"repeats over 20", Variant("request_rate: 6", "request_rate: 6\n  repeats: 21"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "workload.repeats"},
      {"cache ratio 1.5", Variant("seed: 7", "seed: 7\n    prefix_cache_ratio: 1.5"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "workload.dataset.prefix_cache_ratio"},
      {"requests longer than the context", Variant("max_model_len: 32768", "max_model_len: 1000"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "max_model_len"},
      // Keys, types and enums.
      {"duplicate key", Variant("  concurrency: 128", "  concurrency: 128\n  concurrency: 64"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "workload.concurrency: given twice"},
      {"duplicate map key", Variant("owner: perf-team", "owner: perf-team\n  owner: me"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "labels.owner: given twice"},
      {"unknown engine", Variant("engine: sim", "engine: tensorrt"), kExitInvalidArgument,
       "INVALID_ARGUMENT", "deployment.engine"},
      {"enum by number", Variant("engine: sim", "engine: 99"), kExitInvalidArgument,
       "INVALID_ARGUMENT", "deployment.engine"},
      {"unknown arrival", Variant("arrival: poisson", "arrival: bursty"), kExitInvalidArgument,
       "INVALID_ARGUMENT", "workload.arrival"},
      {"generate API on the sim", Variant("request_rate: 6", "request_rate: 6\n  api: generate"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "workload.api"},
      {"list for a mapping", Variant("labels:\n  owner: perf-team", "labels: [1, 2]"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "labels"},
      {"mapping for a scalar", Variant("scenario: 16k-nocache", "scenario: {a: 1}"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "scenario"},
      {"empty scenario", Variant("scenario: 16k-nocache", "scenario: \"\""), kExitInvalidArgument,
       "INVALID_ARGUMENT", "scenario"},
      {"relative program path",
       Variant("engine: sim", "engine: sim\n  programs: {vllm_binary: bin/vllm}"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "deployment.programs.vllm_binary"},
      {"a secret's value in a spec file",
       Variant("max_num_seqs: 256", "max_num_seqs: 256\n    env: {WANDB_API_KEY: k}"),
       kExitInvalidArgument, "INVALID_ARGUMENT", "deployment.decode.env.WANDB_API_KEY"},
      // YAML that expands or nests without end.
      {"YAML bomb (aliases)",
       Variant("max_num_seqs: 128", "max_num_seqs: 128\n    extra_args: " + bomb),
       kExitInvalidArgument, "INVALID_ARGUMENT", "deployment.prefill.extra_args[0]"},
      {"nesting 10,000 deep", Variant("owner: perf-team", "owner: " + deep), kExitInvalidArgument,
       "INVALID_ARGUMENT", "malformed YAML"},
      // Referenced files.
      {"layout is a FIFO", Variant(layout, "expert_layout: " + fifo), kExitInvalidArgument,
       "INVALID_ARGUMENT", "is a FIFO"},
      {"layout links to /dev/zero", Variant(layout, "expert_layout: " + zero), kExitInvalidArgument,
       "INVALID_ARGUMENT", "is a character device"},
      {"layout is a directory", Variant(layout, "expert_layout: " + directory),
       kExitInvalidArgument, "INVALID_ARGUMENT", "is a directory"},
      {"layout over the size limit", Variant(layout, "expert_layout: " + huge),
       kExitInvalidArgument, "INVALID_ARGUMENT", "over the limit"},
      {"layout path through ..",
       Variant(layout, "expert_layout: layouts/../layouts/../nothing.json"), kExitNotFound,
       "NOT_FOUND", "deployment.decode.expert_layout"},
      // Deltas.
      {"--set NaN", Delta({"workload.request_rate=nan"}), kExitInvalidArgument, "INVALID_ARGUMENT",
       "workload.request_rate"},
      {"--set negative duration", Delta({"limits.formal_deadline=-1s"}), kExitInvalidArgument,
       "INVALID_ARGUMENT", "limits.formal_deadline"},
      {"--set bad duration", Delta({"limits.drain_timeout=soon"}), kExitInvalidArgument,
       "INVALID_ARGUMENT", "limits.drain_timeout"},
      {"--set unknown enum", Delta({"workload.arrival=bursty"}), kExitInvalidArgument,
       "INVALID_ARGUMENT", "workload.arrival"},
      {"--set overflow", Delta({"workload.num_requests=99999999999"}), kExitInvalidArgument,
       "INVALID_ARGUMENT", "workload.num_requests"},
      {"--set negative device", Delta({"deployment.decode.devices=[-3]"}), kExitInvalidArgument,
       "INVALID_ARGUMENT", "deployment.decode.devices"},
      {"--set index out of range", Delta({"deployment.decode.extra_args[99]=x"}),
       kExitInvalidArgument, "INVALID_ARGUMENT", "deployment.decode.extra_args"},
      {"--set without =", Delta({"workload.concurrency"}), kExitInvalidArgument, "INVALID_ARGUMENT",
       "workload.concurrency"},
      {"--set a FIFO as layout", Delta({"deployment.decode.expert_layout=" + fifo}),
       kExitInvalidArgument, "INVALID_ARGUMENT", "is a FIFO"},
      {"--unset a required field",
       [](CliIntegrationTest&, const std::string& base) {
         return std::vector<std::string>{"submit", "--base", base, "--unset", "scenario"};
       },
       kExitInvalidArgument, "INVALID_ARGUMENT", "scenario"},
      // CLI arguments and files the CLI reads.
      {"spec over 4 MiB", args({"submit", "-f", big_spec}), kExitUsage, "usage", "over the limit"},
      {"spec is a FIFO", args({"submit", "-f", fifo}), kExitUsage, "usage", "is a FIFO"},
      {"spec is a directory", args({"submit", "-f", directory}), kExitUsage, "usage",
       "is a directory"},
      {"spec not UTF-8", args({"submit", "-f", latin1}), kExitUsage, "usage", "not UTF-8"},
      {"argument not UTF-8", Delta({"labels.owner=caf\xe9"}), kExitUsage, "usage", "not UTF-8"},
      {"-f and --base", args({"submit", "-f", Example("16k-nocache.yaml"), "--base", "exp-1"}),
       kExitUsage, "usage", "either"},
      {"unknown output format", args({"-o", "yaml", "list"}), kExitUsage, "usage", "yaml"},
      {"unknown wait point", args({"wait", "exp-1", "--until", "soon"}), kExitUsage, "usage",
       "soon"},
      {"unknown release side", args({"release", "--side", "middle"}), kExitUsage, "usage",
       "middle"},
      // Ids.
      {"id with a path", args({"status", "../../etc/passwd"}), kExitNotFound, "NOT_FOUND",
       "../../etc/passwd"},
      {"id with a control character", args({"status", "exp-1\x1b[2J"}), kExitNotFound, "NOT_FOUND",
       "exp-1\\x1b[2J"},
      {"resume an unknown id", args({"resume", "exp-4242"}), kExitNotFound, "NOT_FOUND",
       "exp-4242"},
      {"cancel an unknown id", args({"cancel", "exp-4242"}), kExitNotFound, "NOT_FOUND",
       "exp-4242"},
      {"watch an unknown id", args({"watch", "exp-4242"}), kExitNotFound, "NOT_FOUND", "exp-4242"},
      {"delta on an unknown base",
       args({"submit", "--base", "exp-4242", "--set", "workload.concurrency=2"}), kExitNotFound,
       "NOT_FOUND", "exp-4242"},
  };
  const std::string before = ListJson();
  RunCatalogue(cases, base.id(), before);
  EXPECT_TRUE(daemon->Running());  // Nothing above hung or crashed it.
}

TEST(CliHelpTest, EveryCommandHasHelp) {
  for (const char* command :
       {"submit", "plan", "status", "list", "watch", "wait", "resume", "cancel", "summary"}) {
    RunResult r = testing::Run({BinPath("servelab"), command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_THAT(r.out, HasSubstr("Usage:")) << command;
  }
  RunResult r = testing::Run({BinPath("servelab"), "--help"});
  EXPECT_THAT(r.out, HasSubstr("SERVELAB_ADDR"));
  EXPECT_THAT(r.out, HasSubstr("Exit codes"));
  RunResult d = testing::Run({BinPath("servelabd"), "--help"});
  EXPECT_EQ(d.exit_code, 0);
  EXPECT_THAT(d.out, HasSubstr("--state-dir"));
}

}  // namespace
}  // namespace servelab
