// Faults of the world (issue 10, R2), each on real servelab-sim processes the
// real servelabd launched: an instance or the router dies under the formal
// load, requests fail with 5xx or lose their stream, a port is taken before
// launch. Each test states the outcome DESIGN §7 defines and checks it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "servelab/v1/experiment.pb.h"
#include "storage/sqlite_store.h"
#include "tests/testing/ports.h"
#include "tests/workflow/daemon_fixture.h"

namespace servelab {
namespace {

using ::testing::HasSubstr;
using testing::RunResult;
using testing::SourcePath;

// No cache seeding: the sim's faults then hit the formal requests only.
constexpr char kNoSeeds[] = "workload.dataset.prefix_cache_ratio=0";

class WorldFaultsTest : public DaemonFixture {
 protected:
  void SetUp() override {
    DaemonFixture::SetUp();
    StartDaemon({"--sim-time-scale", "0.05"});
  }

  // The demo spec, small; the lane waits at most 5 s for a drain.
  std::string SubmitBase(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {
        "-f",    SourcePath("deploy/examples/pd-quick.yaml"), "--set", "workload.num_requests=16",
        "--set", "workload.dataset.input_tokens=1024",        "--set", "limits.drain_timeout=5s"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Submit(args);
  }

  // A long formal load on the hot deployment of `base`, once it is sending.
  std::string StartLongLoad(const std::string& base) {
    const std::string id = Submit(
        {"--base", base, "--set", "workload.num_requests=600", "--set", "workload.concurrency=4"});
    RunResult sent = Cli({"wait", id, "--until", "sent", "--timeout", "60s"});
    EXPECT_EQ(sent.exit_code, 0) << sent.err;
    EXPECT_TRUE(WaitForFormalRecords());
    return id;
  }

  // Sets a sim's faults at run time (sim/README.md "Faults").
  static void Faults(int port, const std::string& json) {
    RunResult r =
        testing::Run({"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-d", json,
                      absl::StrCat("http://127.0.0.1:", port, "/admin/faults")});
    ASSERT_EQ(r.out, "200") << r.err;
  }

  // A side dies under the formal load: the load is LOAD_INTERRUPTED, the
  // survivors stay up, and resume relaunches the dead side (and the router
  // that must follow its new port) for a new formal attempt.
  void DiesUnderTheLoad(v1::StageName dying) {
    v1::Experiment base = WaitFinal(SubmitBase());
    ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
    const int prefill_pid = Counter(base, v1::STAGE_LAUNCH_PREFILL, "pid");
    const int dead_pid = Counter(base, dying, "pid");
    const std::string id = StartLongLoad(base.id());
    kill(dead_pid, SIGKILL);

    v1::Experiment e = WaitFinal(id);
    EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
    EXPECT_EQ(e.failure_class(), v1::LOAD_INTERRUPTED) << e.blocker();
    EXPECT_THAT(e.blocker(),
                HasSubstr(absl::StrCat("(pid ", dead_pid, ") exited during the formal load")));
    EXPECT_LT(e.progress().formal_requests_completed(), 600);
    EXPECT_TRUE(Alive(prefill_pid) || dying == v1::STAGE_LAUNCH_PREFILL);
    // The lane is free at once: nothing waits on a dead process to drain.
    RunResult summary = Cli({"summary"});
    EXPECT_THAT(summary.out, HasSubstr("lane:             idle")) << summary.out;

    ASSERT_EQ(Cli({"resume", id}).exit_code, 0);
    e = WaitFinal(id);
    ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
    EXPECT_EQ(Counter(e, v1::STAGE_FORMAL_LOAD, "attempt"), 2);
    EXPECT_EQ(e.progress().formal_requests_completed(), 600);
    EXPECT_EQ(StageOf(e, dying).status(), v1::STAGE_STATUS_SUCCEEDED);
    EXPECT_NE(Counter(e, dying, "pid"), dead_pid);
    // A new process is warmed and its route verified again before the load.
    EXPECT_EQ(StageOf(e, v1::STAGE_WARMUP).status(), v1::STAGE_STATUS_SUCCEEDED);
    EXPECT_EQ(StageOf(e, v1::STAGE_ROUTE_VERIFY).status(), v1::STAGE_STATUS_SUCCEEDED);
    if (dying != v1::STAGE_LAUNCH_PREFILL) {
      EXPECT_EQ(StageOf(e, v1::STAGE_LAUNCH_PREFILL).status(), v1::STAGE_STATUS_REUSED);
      EXPECT_TRUE(Alive(prefill_pid));
    }
  }
};

TEST_F(WorldFaultsTest, PrefillDiesUnderTheLoad) { DiesUnderTheLoad(v1::STAGE_LAUNCH_PREFILL); }

TEST_F(WorldFaultsTest, DecodeDiesUnderTheLoad) { DiesUnderTheLoad(v1::STAGE_LAUNCH_DECODE); }

TEST_F(WorldFaultsTest, RouterDiesUnderTheLoad) { DiesUnderTheLoad(v1::STAGE_LAUNCH_ROUTER); }

// Every request answered 503: the load runs to its end, each failure is
// recorded with its status, and the experiment still reports what it saw.
TEST_F(WorldFaultsTest, A5xxStormIsRecordedRequestByRequest) {
  v1::Experiment base = WaitFinal(SubmitBase());
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  Faults(Counter(base, v1::STAGE_LAUNCH_ROUTER, "port"), R"({"error_fraction": 1.0})");
  v1::Experiment e = WaitFinal(Submit({"--base", base.id(), "--set", kNoSeeds}));
  EXPECT_EQ(e.progress().formal_requests_sent(), 16);
  EXPECT_EQ(e.progress().formal_requests_failed(), 16);
  EXPECT_EQ(e.progress().formal_requests_completed(), 0);
  RunResult n = testing::Run({"/usr/bin/sqlite3", state_dir_ + "/servelab.db",
                              "SELECT count(*) FROM requests WHERE experiment_id = '" + e.id() +
                                  "' AND phase = 4 AND error LIKE '%503%'"});
  EXPECT_EQ(n.out, "16\n") << n.err;
}

// Streams cut after the first token: each is a failed request, never a
// completed one counted with a short output. (Set once the load is sending:
// the cache reset's check requests to decode would be cut too.)
TEST_F(WorldFaultsTest, ADroppedStreamIsAFailureNotAShortCompletion) {
  v1::Experiment base = WaitFinal(SubmitBase());
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  const std::string id = StartLongLoad(base.id());
  Faults(Counter(base, v1::STAGE_LAUNCH_DECODE, "port"), R"({"drop_next": 5})");
  v1::Experiment e = WaitFinal(id);
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  EXPECT_EQ(e.progress().formal_requests_sent(), 600);
  EXPECT_EQ(e.progress().formal_requests_failed(), 5);
  EXPECT_EQ(e.progress().formal_requests_completed(), 595);
  EXPECT_EQ(e.result().whole().requests_completed(), 595);
}

// The router refuses new connections for a second mid-load. The load
// generator's keep-alive connections are open already, so the load goes on
// (a request that needed a new connection would fail, recorded); every
// request ends completed or failed, none lost.
TEST_F(WorldFaultsTest, ARouterRefusingConnectionsForAWhileLosesNoRequest) {
  v1::Experiment base = WaitFinal(SubmitBase());
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  const std::string id = StartLongLoad(base.id());
  Faults(Counter(base, v1::STAGE_LAUNCH_ROUTER, "port"), R"({"refuse_connections_seconds": 1})");
  v1::Experiment e = WaitFinal(id);
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  EXPECT_EQ(e.progress().formal_requests_sent(), 600);
  EXPECT_EQ(e.progress().formal_requests_completed() + e.progress().formal_requests_failed(), 600);
  std::printf("refused for 1 s: %lld completed, %lld failed\n",
              static_cast<long long>(e.progress().formal_requests_completed()),
              static_cast<long long>(e.progress().formal_requests_failed()));
}

// An instance that hangs (SIGSTOP: alive, answering nothing): the formal
// deadline fires, the drain cannot be confirmed, and the experiment is
// LOAD_END_UNKNOWN holding the lane, so no load starts on top of it. A
// release is the user's way out: it stops the instances, which ends the
// hold, and the next experiment launches a new deployment.
TEST_F(WorldFaultsTest, AHungInstanceHoldsTheLaneUntilTheUserReleasesIt) {
  v1::Experiment base = WaitFinal(SubmitBase());
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  const int decode_pid = Counter(base, v1::STAGE_LAUNCH_DECODE, "pid");
  const std::string id = Submit({"--base", base.id(), "--set", "workload.num_requests=600", "--set",
                                 "workload.concurrency=4", "--set", "limits.formal_deadline=3s"});
  ASSERT_EQ(Cli({"wait", id, "--until", "sent", "--timeout", "60s"}).exit_code, 0);
  kill(decode_pid, SIGSTOP);

  v1::Experiment e = WaitFinal(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::LOAD_END_UNKNOWN) << e.blocker();
  const std::string queued = Submit({"--base", base.id(), "--set", "workload.concurrency=2"});
  RunResult summary = Cli({"summary"});
  EXPECT_THAT(summary.out, HasSubstr("lane:             " + id)) << summary.out;
  EXPECT_EQ(Status(queued).progress().formal_requests_sent(), 0);  // Nothing on top of it.

  RunResult release = Cli({"release"});
  ASSERT_EQ(release.exit_code, 0) << release.err;
  EXPECT_TRUE(testing::WaitFor([&] { return !Alive(decode_pid); }, absl::Seconds(30)));
  v1::Experiment next = WaitFinal(queued);
  ASSERT_EQ(next.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << next.blocker();
  EXPECT_EQ(StageOf(next, v1::STAGE_LAUNCH_DECODE).status(), v1::STAGE_STATUS_SUCCEEDED);
  EXPECT_THAT(Status(id).blocker(), HasSubstr("instances drained"));
}

// While the daemon was down its decode died and an unrelated process got
// its pid (simulated by giving the stored row that process's pid; the start
// time stays decode's). The restarted daemon neither adopts nor kills it,
// and the next experiment launches decode again.
TEST_F(WorldFaultsTest, APidReusedWhileTheDaemonWasDownIsNeitherAdoptedNorKilled) {
  v1::Experiment base = WaitFinal(SubmitBase());
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  const int decode_pid = Counter(base, v1::STAGE_LAUNCH_DECODE, "pid");
  StopDaemon();
  kill(decode_pid, SIGKILL);
  ASSERT_TRUE(testing::WaitFor([&] { return !Alive(decode_pid); }, absl::Seconds(10)));
  testing::Process stranger({"/usr/bin/sleep", "600"});
  {
    absl::StatusOr<std::unique_ptr<storage::SqliteStore>> store =
        storage::SqliteStore::Open(state_dir_ + "/servelab.db");
    ASSERT_TRUE(store.ok()) << store.status();
    absl::StatusOr<std::vector<v1::ServingInstance>> instances = (*store)->ListInstances();
    ASSERT_TRUE(instances.ok()) << instances.status();
    for (v1::ServingInstance instance : *instances) {
      if (instance.side() != v1::SIDE_DECODE) continue;
      instance.set_pid(stranger.pid());
      ASSERT_TRUE((*store)->PutInstance(instance).ok());
    }
  }

  StartDaemon({"--sim-time-scale", "0.05"});
  v1::Experiment next = WaitFinal(Submit({"--base", base.id(), "--set", "workload.concurrency=8"}));
  ASSERT_EQ(next.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << next.blocker();
  EXPECT_EQ(StageOf(next, v1::STAGE_LAUNCH_DECODE).status(), v1::STAGE_STATUS_SUCCEEDED);
  EXPECT_NE(Counter(next, v1::STAGE_LAUNCH_DECODE, "pid"), stranger.pid());
  EXPECT_TRUE(stranger.Running());
}

// A fixed port someone else holds: the launch fails naming it, nothing of
// ours is left running, and the other process is untouched.
TEST_F(WorldFaultsTest, APortTakenBeforeLaunchFailsTheLaunchAndTouchesNothing) {
  const int port = testing::ClosedLoopbackPort();
  testing::Process squatter({"/usr/bin/python3", "-c",
                             absl::StrCat("import socket,time\ns=socket.socket()\n"
                                          "s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
                                          "s.bind(('127.0.0.1',",
                                          port, "))\ns.listen()\ntime.sleep(600)")});
  ASSERT_TRUE(testing::WaitFor([&] { return !testing::CanBindLoopback(port); }, absl::Seconds(10)));
  v1::Experiment e =
      WaitFinal(SubmitBase({"--set", absl::StrCat("deployment.decode.port=", port)}));
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::NO_REQUESTS_SENT);
  EXPECT_THAT(e.blocker(), HasSubstr(absl::StrCat(port)));
  EXPECT_EQ(e.progress().formal_requests_sent(), 0);
  EXPECT_TRUE(squatter.Running());
  EXPECT_FALSE(testing::CanBindLoopback(port));  // Still the squatter's.
}

// The disk fills while a load is being recorded (the state dir on a 3 MiB
// tmpfs): servelabd stops writing and says why (NOT serving, the SQLite
// error), the load stops, and nothing is claimed that was not stored. With
// space back and a restart, the experiment is LOAD_INTERRUPTED and resumes.
class DiskFullTest : public DaemonFixture {
 protected:
  void SetUp() override {
    DaemonFixture::SetUp();
    ASSERT_EQ(mkdir(state_dir_.c_str(), 0700), 0);
    if (mount("tmpfs", state_dir_.c_str(), "tmpfs", 0, "size=3m,mode=0700") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here (needs CAP_SYS_ADMIN): " << strerror(errno);
    }
    mounted_ = true;
  }
  void TearDown() override {
    DaemonFixture::TearDown();  // Stops the daemon and every instance it launched.
    if (mounted_) umount2(state_dir_.c_str(), MNT_DETACH);
  }
  bool mounted_ = false;
};

TEST_F(DiskFullTest, ADiskFullDuringTheLoadStopsItAndSaysWhy) {
  StartDaemon({"--sim-time-scale", "0.05"});
  v1::Experiment base = WaitFinal(
      Submit({"-f", SourcePath("deploy/examples/pd-quick.yaml"), "--set",
              "workload.num_requests=16", "--set", "workload.dataset.input_tokens=1024"}));
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  const std::string id = Submit({"--base", base.id(), "--set", "workload.num_requests=20000",
                                 "--set", "workload.concurrency=16"});
  RunResult summary;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        summary = Cli({"summary"});
        return summary.out.find("NOT serving") != std::string::npos;
      },
      absl::Seconds(60)))
      << summary.out;
  EXPECT_THAT(summary.out, HasSubstr("database or disk is full"));
  // The load stops: records that cannot be stored are not sent.
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        summary = Cli({"summary"});
        return summary.out.find("lane:             idle") != std::string::npos;
      },
      absl::Seconds(30)))
      << summary.out;
  RunResult refused = Cli({"submit", "--base", base.id(), "--set", "workload.concurrency=2"});
  EXPECT_NE(refused.exit_code, 0);  // No new work while nothing can be stored.

  StopDaemon();
  ASSERT_EQ(mount("tmpfs", state_dir_.c_str(), "tmpfs", MS_REMOUNT, "size=64m,mode=0700"), 0);
  StartDaemon({"--sim-time-scale", "0.05"});
  v1::Experiment e = Status(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::LOAD_INTERRUPTED) << e.blocker();
  EXPECT_LT(e.progress().formal_requests_sent(), 20000);
  RunResult integrity =
      testing::Run({"/usr/bin/sqlite3", state_dir_ + "/servelab.db", "PRAGMA integrity_check"});
  EXPECT_EQ(integrity.out, "ok\n") << integrity.err;
}

}  // namespace
}  // namespace servelab
