// The Daemon in-process: state dir, lock, socket, addresses, health, metrics,
// restart. The binaries are covered by cli_integration_test.
#include "daemon/service/daemon.h"

#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "servelab/v1/service.grpc.pb.h"
#include "tests/daemon/http_get.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::service {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// grpc.health.v1.Health/Check by hand (the health proto's stubs are not
// installed): an empty request, and a response whose field 1 is the status.
std::string HealthCheck(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::ByteBuffer request;
  grpc::Slice empty("");
  request = grpc::ByteBuffer(&empty, 1);
  grpc::ByteBuffer response;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) {
                   std::lock_guard<std::mutex> lock(mu);
                   status = s;
                   done = true;
                   cv.notify_one();
                 });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  if (!status.ok()) return absl::StrCat("error ", status.error_code());
  std::vector<grpc::Slice> slices;
  (void)response.Dump(&slices);
  std::string bytes;
  for (const auto& slice : slices)
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  if (bytes == std::string("\x08\x01", 2)) return "SERVING";
  if (bytes == std::string("\x08\x02", 2)) return "NOT_SERVING";
  return "unexpected";
}

TEST(DaemonTest, DefaultSocketIsOwnerOnlyAndAddressIsWritten) {
  testing::TempDir dir;
  std::string state = dir.File("state");
  auto daemon = Daemon::Create({.state_dir = state});
  ASSERT_THAT(daemon, IsOk());
  ASSERT_THAT((*daemon)->Start(), IsOk());

  struct stat st;
  ASSERT_EQ(stat(state.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700);
  std::string socket = state + "/servelab.sock";
  ASSERT_EQ(stat(socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600);
  EXPECT_EQ(Trimmed(testing::ReadFile(state + "/servelabd.addr")), "unix:" + socket);
  EXPECT_EQ((*daemon)->address(), "unix:" + socket);
  EXPECT_EQ(Trimmed(testing::ReadFile(state + "/servelabd.lock")), absl::StrCat(getpid()));
  EXPECT_EQ(HealthCheck((*daemon)->InProcessChannel()), "SERVING");

  // A real client over the socket.
  auto stub = v1::ServeLab::NewStub(
      grpc::CreateChannel((*daemon)->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::ListExperimentsResponse list;
  EXPECT_TRUE(stub->ListExperiments(&context, {}, &list).ok());

  (*daemon)->Shutdown(absl::Seconds(1));
  EXPECT_FALSE(testing::FileExists(socket));
  EXPECT_FALSE(testing::FileExists(state + "/servelabd.addr"));
}

// The store fails the stage runner's first write for good (a trigger on the
// event log stands in for a full disk): the runner latches the error, health
// turns NOT_SERVING, new work is refused and the summary says why.
TEST(DaemonTest, ALatchedLedgerErrorTurnsHealthNotServing) {
  testing::TempDir dir;
  auto daemon = Daemon::Create({.state_dir = dir.path(), .sim_binary = "/bin/true"});
  ASSERT_THAT(daemon, IsOk());
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(dir.File("servelab.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "CREATE TRIGGER disk_full BEFORE INSERT ON events "
                           "WHEN NEW.detail LIKE 'queued -> running%' "
                           "BEGIN SELECT RAISE(ABORT, 'disk I/O error (test)'); END;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  ASSERT_THAT((*daemon)->Start(), IsOk());
  auto channel = (*daemon)->InProcessChannel();
  EXPECT_EQ(HealthCheck(channel), "SERVING");
  auto stub = v1::ServeLab::NewStub(channel);
  const std::string examples = testing::SourcePath("deploy/examples");
  v1::SubmitExperimentRequest submit;
  submit.set_spec_text(testing::ReadFile(examples + "/16k-nocache.yaml"));
  submit.set_base_dir(examples);
  {
    grpc::ClientContext context;
    v1::SubmitExperimentResponse response;
    ASSERT_TRUE(stub->SubmitExperiment(&context, submit, &response).ok());
  }
  EXPECT_TRUE(
      testing::WaitFor([&] { return HealthCheck(channel) == "NOT_SERVING"; }, absl::Seconds(20)));
  {
    grpc::ClientContext context;
    v1::SubmitExperimentResponse response;
    grpc::Status refused = stub->SubmitExperiment(&context, submit, &response);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(refused.error_message(), HasSubstr("disk I/O error (test)"));
  }
  grpc::ClientContext context;
  v1::Summary summary;
  ASSERT_TRUE(stub->GetSummary(&context, {}, &summary).ok());
  EXPECT_FALSE(summary.serving());
  EXPECT_THAT(summary.next_step().reason(), HasSubstr("disk I/O error (test)"));
  (*daemon)->Shutdown(absl::Seconds(1));
}

TEST(DaemonTest, SecondDaemonOnTheSameDirIsRefusedWithThePid) {
  testing::TempDir dir;
  auto first = Daemon::Create({.state_dir = dir.path()});
  ASSERT_THAT(first, IsOk());
  EXPECT_THAT(
      Daemon::Create({.state_dir = dir.path()}),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(absl::StrCat("pid ", getpid()))));
  first->reset();
  EXPECT_THAT(Daemon::Create({.state_dir = dir.path()}), IsOk());
}

TEST(DaemonTest, StaleSocketIsReplaced) {
  testing::TempDir dir;
  std::string socket_path = dir.File("servelab.sock");
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  strncpy(address.sun_path, socket_path.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  close(fd);  // Leaves the file behind, like a crashed daemon.
  ASSERT_TRUE(testing::FileExists(socket_path));

  auto daemon = Daemon::Create({.state_dir = dir.path()});
  ASSERT_THAT(daemon, IsOk());
  EXPECT_THAT((*daemon)->Start(), IsOk());
}

TEST(DaemonTest, AFileInPlaceOfTheSocketIsNotRemoved) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("servelab.sock"), "precious");
  auto daemon = Daemon::Create({.state_dir = dir.path()});
  ASSERT_THAT(daemon, IsOk());
  EXPECT_THAT((*daemon)->Start(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a socket")));
  EXPECT_EQ(testing::ReadFile(dir.File("servelab.sock")), "precious");
}

TEST(DaemonTest, LoopbackTcpWithPortZero) {
  testing::TempDir dir;
  auto daemon = Daemon::Create({.state_dir = dir.path(), .listen = "tcp:127.0.0.1:0"});
  ASSERT_THAT(daemon, IsOk());
  ASSERT_THAT((*daemon)->Start(), IsOk());
  std::string address = (*daemon)->address();
  ASSERT_TRUE(absl::StartsWith(address, "tcp:127.0.0.1:")) << address;
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(address.substr(strlen("tcp:127.0.0.1:")), &port));
  EXPECT_GT(port, 0);
  EXPECT_EQ(Trimmed(testing::ReadFile(dir.File("servelabd.addr"))), address);
  auto stub = v1::ServeLab::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::ListExperimentsResponse list;
  EXPECT_TRUE(stub->ListExperiments(&context, {}, &list).ok());

  // The port is taken now: a second daemon (other dir) cannot bind it.
  testing::TempDir other;
  auto second =
      Daemon::Create({.state_dir = other.path(), .listen = absl::StrCat("tcp:127.0.0.1:", port)});
  ASSERT_THAT(second, IsOk());
  EXPECT_THAT((*second)->Start(),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("cannot listen")));
}

TEST(DaemonTest, NonLoopbackNeedsAllowRemote) {
  testing::TempDir dir;
  EXPECT_THAT(Daemon::Create({.state_dir = dir.path(), .listen = "tcp:0.0.0.0:0"}),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("--allow-remote")));
  EXPECT_THAT(Daemon::Create({.state_dir = dir.path(), .metrics_listen = "0.0.0.0:0"}),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("--allow-remote")));
  EXPECT_THAT(
      Daemon::Create({.state_dir = dir.path(), .listen = "localhost:1"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unix:PATH or tcp:HOST:PORT")));
  // Nothing was taken by the refused attempts.
  EXPECT_THAT(Daemon::Create({.state_dir = dir.path()}), IsOk());
}

TEST(DaemonTest, MetricsEndpointServesRpcsAndExperiments) {
  testing::TempDir dir;
  auto daemon = Daemon::Create({.state_dir = dir.path(), .metrics_listen = "127.0.0.1:0"});
  ASSERT_THAT(daemon, IsOk());
  ASSERT_THAT((*daemon)->Start(), IsOk());
  int port = (*daemon)->metrics_port();
  ASSERT_GT(port, 0);
  EXPECT_EQ(Trimmed(testing::ReadFile(dir.File("servelabd.metrics.addr"))),
            absl::StrCat("127.0.0.1:", port));

  auto stub = v1::ServeLab::NewStub((*daemon)->InProcessChannel());
  grpc::ClientContext context;
  v1::Experiment ignored;
  v1::GetExperimentRequest request;
  request.set_id("exp-404");
  EXPECT_EQ(stub->GetExperiment(&context, request, &ignored).error_code(),
            grpc::StatusCode::NOT_FOUND);

  std::string scrape = testing::HttpGet("127.0.0.1", port, "/metrics");
  EXPECT_THAT(scrape, HasSubstr("servelab_rpcs_total{"));
  EXPECT_THAT(scrape, HasSubstr("method=\"GetExperiment\""));
  EXPECT_THAT(scrape, HasSubstr("code=\"NOT_FOUND\""));
  EXPECT_THAT(scrape, HasSubstr("servelab_experiments{state=\"queued\"} 0"));
}

TEST(DaemonTest, MetricsPortInUseIsAClearError) {
  testing::TempDir dir;
  auto first = Daemon::Create({.state_dir = dir.File("a"), .metrics_listen = "127.0.0.1:0"});
  ASSERT_THAT(first, IsOk());
  ASSERT_THAT((*first)->Start(), IsOk());
  auto second =
      Daemon::Create({.state_dir = dir.File("b"),
                      .metrics_listen = absl::StrCat("127.0.0.1:", (*first)->metrics_port())});
  ASSERT_THAT(second, IsOk());
  EXPECT_THAT((*second)->Start(),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("cannot serve /metrics")));
}

TEST(DaemonTest, RestartKeepsExperiments) {
  testing::TempDir dir;
  std::string id;
  {
    // Paused: the experiment must stay queued across the restart.
    auto daemon = Daemon::Create({.state_dir = dir.path(), .paused = true});
    ASSERT_THAT(daemon, IsOk());
    ASSERT_THAT((*daemon)->Start(), IsOk());
    auto stub = v1::ServeLab::NewStub((*daemon)->InProcessChannel());
    grpc::ClientContext context;
    v1::SubmitExperimentRequest request;
    request.set_spec_text(
        testing::ReadFile(testing::SourcePath("deploy/examples/16k-nocache.yaml")));
    request.set_base_dir(testing::SourcePath("deploy/examples"));
    v1::SubmitExperimentResponse response;
    grpc::Status status = stub->SubmitExperiment(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    id = response.experiment().id();
    (*daemon)->Shutdown(absl::Seconds(1));
  }
  auto daemon = Daemon::Create({.state_dir = dir.path(), .paused = true});
  ASSERT_THAT(daemon, IsOk());
  ASSERT_THAT((*daemon)->Start(), IsOk());
  auto stub = v1::ServeLab::NewStub((*daemon)->InProcessChannel());
  grpc::ClientContext context;
  v1::GetExperimentRequest request;
  request.set_id(id);
  v1::Experiment experiment;
  EXPECT_TRUE(stub->GetExperiment(&context, request, &experiment).ok());
  EXPECT_EQ(experiment.state(), v1::EXPERIMENT_STATE_QUEUED);
}

}  // namespace
}  // namespace servelab::service
