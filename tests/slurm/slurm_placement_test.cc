// SlurmPlacement against a real single-node Slurm (tests/slurm/slurm_fixture.h):
// allocation, steps, re-adoption by a second placement object as after a
// daemon restart, stops from inside and outside, and the real servelab-sim
// serving from a step.
#include "daemon/placement/slurm_placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "daemon/placement/process_launcher.h"
#include "tests/daemon/http_get.h"
#include "tests/slurm/slurm_fixture.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"

namespace servelab::placement {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::RunResult;
using ::servelab::testing::SlurmCluster;
using ::servelab::testing::StatusIs;
using ::servelab::testing::WaitFor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;

// An OK StatusOr holding `value`.
MATCHER_P(IsOkAnd, value, "") {
  if (!arg.ok()) {
    *result_listener << arg.status();
    return false;
  }
  return *arg == value;
}

class SlurmPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override { cluster_ = servelab::testing::StartClusterOrSkip(); }

  void TearDown() override {
    if (cluster_ == nullptr) return;
    EXPECT_THAT(cluster_->Stop(), IsOk());
    EXPECT_THAT(cluster_->Processes(), IsEmpty());
  }

  SlurmOptions Options() const {
    SlurmOptions options;
    options.gres = "gpu:16";
    options.env = cluster_->Env();
    options.allocation_timeout = absl::Seconds(30);
    options.step_start_timeout = absl::Seconds(20);
    return options;
  }

  std::unique_ptr<SlurmPlacement> Allocate(const SlurmOptions& options) {
    absl::StatusOr<std::unique_ptr<SlurmPlacement>> placement = SlurmPlacement::Create(options);
    EXPECT_THAT(placement, IsOk());
    return placement.ok() ? std::move(*placement) : nullptr;
  }

  PlacementRequest Sleep(const std::string& name) const {
    PlacementRequest request;
    request.argv = {"/bin/sleep", "300"};
    request.log_path = cluster_->dir() + "/logs/" + name + ".log";
    request.name = name;
    request.node = "localhost";
    return request;
  }

  // squeue's rows for the job's steps: "STEP NAME".
  std::vector<std::string> Steps(const std::string& job) const {
    RunResult r = cluster_->Client({"squeue", "--steps", "-h", "-j", job, "-o", "%i %j"});
    return absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  }

  std::string JobState(const std::string& job) const {
    return std::string(
        absl::StripAsciiWhitespace(cluster_->Client({"squeue", "-h", "-j", job, "-o", "%T"}).out));
  }

  // The environment of the step's task, found in /proc: on this one-node
  // cluster the task is a process of this machine. Waits for it, since a
  // step is listed as running before slurmstepd has started its task.
  std::map<std::string, std::string> TaskEnv(const PlacedProcess& placed) const;
  std::map<std::string, std::string> FindTaskEnv(const PlacedProcess& placed) const;

  std::unique_ptr<SlurmCluster> cluster_;
};

std::map<std::string, std::string> SlurmPlacementTest::TaskEnv(const PlacedProcess& placed) const {
  std::map<std::string, std::string> env;
  WaitFor([&] { return !(env = FindTaskEnv(placed)).empty(); }, absl::Seconds(10));
  return env;
}

std::map<std::string, std::string> SlurmPlacementTest::FindTaskEnv(
    const PlacedProcess& placed) const {
  std::vector<std::string> ids = absl::StrSplit(placed.step_id, '.');
  for (int pid : cluster_->Processes()) {
    std::map<std::string, std::string> env;
    std::string environ = servelab::testing::ReadFile(absl::StrCat("/proc/", pid, "/environ"));
    for (absl::string_view entry : absl::StrSplit(environ, '\0', absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv = absl::StrSplit(entry, absl::MaxSplits('=', 1));
      env.insert(kv);
    }
    std::string cmdline = servelab::testing::ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
    if (env["SLURM_JOB_ID"] == ids[0] && env["SLURM_STEP_ID"] == ids[1] &&
        !absl::StartsWith(cmdline, "slurmstepd")) {
      return env;
    }
  }
  return {};
}

TEST_F(SlurmPlacementTest, CreatesAnAllocationAndReleasesIt) {
  std::unique_ptr<SlurmPlacement> slurm = Allocate(Options());
  ASSERT_NE(slurm, nullptr);
  EXPECT_THAT(slurm->job_id(), MatchesRegex("[0-9]+"));
  EXPECT_TRUE(slurm->owns_job());
  EXPECT_EQ(JobState(slurm->job_id()), "RUNNING");
  EXPECT_THAT(slurm->Nodes(), IsOkAnd(std::vector<std::string>{"localhost"}));

  EXPECT_THAT(slurm->Release(), IsOk());
  EXPECT_NE(JobState(slurm->job_id()), "RUNNING");
  EXPECT_THAT(slurm->Spawn(Sleep("late")),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("released")));
}

TEST_F(SlurmPlacementTest, SpawnsAStepThatIsListedAliveAndStops) {
  std::unique_ptr<SlurmPlacement> slurm = Allocate(Options());
  ASSERT_NE(slurm, nullptr);
  PlacementRequest request = Sleep("prefill");
  request.env = {{"SERVELAB_X", "a,b=c"}, {"ASCEND_RT_VISIBLE_DEVICES", "8,9"}};
  absl::StatusOr<PlacedProcess> placed = slurm->Spawn(request);
  ASSERT_THAT(placed, IsOk());
  EXPECT_EQ(placed->kind, kSlurmKind);
  EXPECT_EQ(placed->job_id, slurm->job_id());
  EXPECT_THAT(placed->step_id, MatchesRegex(slurm->job_id() + "\\.[0-9]+"));
  EXPECT_THAT(placed->step_name, MatchesRegex("servelab-prefill-[0-9a-f]{16}"));
  EXPECT_EQ(placed->node, "localhost");
  EXPECT_THAT(Steps(slurm->job_id()), ElementsAre(placed->step_id + " " + placed->step_name));
  EXPECT_THAT(slurm->Alive(*placed), IsOkAnd(true));
  EXPECT_THAT(slurm->Address(*placed), IsOkAnd(std::string("127.0.0.1")));
  // Values with commas arrive whole (no --export=K=V list); Slurm leaves
  // non-CUDA device variables alone.
  std::map<std::string, std::string> env = TaskEnv(*placed);
  EXPECT_EQ(env["SERVELAB_X"], "a,b=c");
  EXPECT_EQ(env["ASCEND_RT_VISIBLE_DEVICES"], "8,9");
  EXPECT_EQ(env["SLURM_CONF"], cluster_->conf());

  EXPECT_THAT(slurm->Stop(*placed, absl::Seconds(5)), IsOk());
  EXPECT_THAT(slurm->Alive(*placed), IsOkAnd(false));
  EXPECT_THAT(Steps(slurm->job_id()), IsEmpty());
  EXPECT_THAT(slurm->Stop(*placed, absl::Seconds(1)), IsOk());
  EXPECT_EQ(JobState(slurm->job_id()), "RUNNING");  // Stopping a step keeps the allocation.
  EXPECT_THAT(slurm->Release(), IsOk());
}

TEST_F(SlurmPlacementTest, ARestartedDaemonAdoptsTheStepFromItsStoredIdentity) {
  std::unique_ptr<SlurmPlacement> first = Allocate(Options());
  ASSERT_NE(first, nullptr);
  absl::StatusOr<PlacedProcess> placed = first->Spawn(Sleep("decode"));
  ASSERT_THAT(placed, IsOk());
  PlacedProcess stored = *placed;
  first.reset();  // The daemon is gone; its srun lives on.

  SlurmOptions readopt = Options();
  readopt.job_id = stored.job_id;
  readopt.own_job = true;
  std::unique_ptr<SlurmPlacement> second = Allocate(readopt);
  ASSERT_NE(second, nullptr);
  EXPECT_THAT(second->Alive(stored), IsOkAnd(true));
  EXPECT_THAT(second->Address(stored), IsOkAnd(std::string("127.0.0.1")));
  PlacedProcess other_name = stored;
  other_name.step_name = "servelab-decode-0000000000000000";
  EXPECT_THAT(second->Alive(other_name), IsOkAnd(false));

  EXPECT_THAT(second->Stop(stored, absl::Seconds(5)), IsOk()) << cluster_->LogTails();
  EXPECT_THAT(second->Alive(stored), IsOkAnd(false));
  // Alive reaps it (it is this process's child) and tells exited from zombie.
  EXPECT_TRUE(WaitFor([&] { return !Alive(stored.pid, stored.start_ticks); }, absl::Seconds(10)))
      << "srun " << stored.pid << " outlived its step";
  EXPECT_THAT(second->Release(), IsOk());
  EXPECT_NE(JobState(stored.job_id), "RUNNING");
}

TEST_F(SlurmPlacementTest, AStepOutlivesItsSrunAndStillStops) {
  std::unique_ptr<SlurmPlacement> slurm = Allocate(Options());
  ASSERT_NE(slurm, nullptr);
  absl::StatusOr<PlacedProcess> placed = slurm->Spawn(Sleep("decode"));
  ASSERT_THAT(placed, IsOk());
  // The daemon's host loses srun (a reboot of the login node, say): the step
  // does not depend on it.
  kill(placed->pid, SIGKILL);
  absl::SleepFor(absl::Seconds(1));
  EXPECT_THAT(slurm->Alive(*placed), IsOkAnd(true));
  // slurmstepd retries its task-exit message to the missing srun before it
  // reports the step complete, so this stop takes longer than with srun.
  EXPECT_THAT(slurm->Stop(*placed, absl::Seconds(20)), IsOk()) << cluster_->LogTails();
  EXPECT_THAT(slurm->Alive(*placed), IsOkAnd(false));
  EXPECT_THAT(slurm->Release(), IsOk());
}

TEST_F(SlurmPlacementTest, ScancelFromOutsideMakesItNotAlive) {
  std::unique_ptr<SlurmPlacement> slurm = Allocate(Options());
  ASSERT_NE(slurm, nullptr);
  absl::StatusOr<PlacedProcess> placed = slurm->Spawn(Sleep("router"));
  ASSERT_THAT(placed, IsOk());
  RunResult scancel = cluster_->Client({"scancel", placed->step_id});
  EXPECT_EQ(scancel.exit_code, 0) << scancel.err;
  EXPECT_TRUE(WaitFor([&] { return !slurm->Alive(*placed).value_or(true); }, absl::Seconds(30)));
  EXPECT_THAT(slurm->Stop(*placed, absl::Seconds(1)), IsOk());
  EXPECT_THAT(slurm->Release(), IsOk());
}

TEST_F(SlurmPlacementTest, TheSimServesFromAStep) {
  const std::string sim = servelab::testing::BinPath("servelab-sim");
  if (!servelab::testing::FileExists(sim)) GTEST_SKIP() << sim << " not built";
  std::unique_ptr<SlurmPlacement> slurm = Allocate(Options());
  ASSERT_NE(slurm, nullptr);
  // The node writes the port file; on this one-node cluster we read it here.
  const std::string port_file = cluster_->dir() + "/sim.port";
  PlacementRequest request = Sleep("prefill");
  request.argv = {sim, "--role", "prefill", "--port", "0", "--port-file", port_file};
  absl::StatusOr<PlacedProcess> placed = slurm->Spawn(request);
  ASSERT_THAT(placed, IsOk());
  int port = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        return absl::SimpleAtoi(absl::StripAsciiWhitespace(servelab::testing::ReadFile(port_file)),
                                &port);
      },
      absl::Seconds(20)))
      << servelab::testing::ReadFile(request.log_path);
  absl::StatusOr<std::string> host = slurm->Address(*placed);
  ASSERT_THAT(host, IsOk());
  // 503 while the model "loads", then 200.
  EXPECT_TRUE(WaitFor(
      [&] {
        return absl::StartsWith(servelab::testing::HttpGet(*host, port, "/health"), "HTTP/1.1 200");
      },
      absl::Seconds(30)))
      << servelab::testing::HttpGet(*host, port, "/health");

  EXPECT_THAT(slurm->Stop(*placed, absl::Seconds(10)), IsOk());
  EXPECT_EQ(servelab::testing::HttpGet(*host, port, "/health"), "");
  EXPECT_THAT(slurm->Release(), IsOk());
}

TEST_F(SlurmPlacementTest, ExclusiveStepsGetTheirOwnDevicesAndABusyOneTimesOut) {
  SlurmOptions options = Options();
  options.sharing = StepSharing::kExclusive;
  options.step_start_timeout = absl::Seconds(3);
  std::unique_ptr<SlurmPlacement> slurm = Allocate(options);
  ASSERT_NE(slurm, nullptr);
  PlacementRequest prefill = Sleep("prefill"), decode = Sleep("decode");
  prefill.devices = decode.devices = 8;
  absl::StatusOr<PlacedProcess> p = slurm->Spawn(prefill);
  absl::StatusOr<PlacedProcess> d = slurm->Spawn(decode);
  ASSERT_THAT(p, IsOk());
  ASSERT_THAT(d, IsOk());
  std::vector<std::string> devices = {TaskEnv(*p)["CUDA_VISIBLE_DEVICES"],
                                      TaskEnv(*d)["CUDA_VISIBLE_DEVICES"]};
  std::sort(devices.begin(), devices.end());
  EXPECT_THAT(devices, ElementsAre("0,1,2,3,4,5,6,7", "8,9,10,11,12,13,14,15"));

  // All 16 GPUs are taken: Slurm queues the step and Spawn gives up, leaving
  // neither a step nor an srun behind.
  PlacementRequest third = Sleep("third");
  third.devices = 1;
  EXPECT_THAT(slurm->Spawn(third),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("not running after 3s")));
  EXPECT_EQ(Steps(slurm->job_id()).size(), 2u);
  EXPECT_THAT(slurm->Stop(*p, absl::Seconds(5)), IsOk());
  EXPECT_THAT(slurm->Stop(*d, absl::Seconds(5)), IsOk());
  EXPECT_THAT(slurm->Release(), IsOk());
}

TEST_F(SlurmPlacementTest, ABorrowedJobIsUsedButNotCancelled) {
  RunResult alloc = cluster_->Client({"salloc", "--no-shell", "--exclusive", "--gres=gpu:16"});
  ASSERT_EQ(alloc.exit_code, 0) << alloc.err;
  absl::StatusOr<std::string> job = ParseGrantedJobId(alloc.err);
  ASSERT_THAT(job, IsOk());
  SlurmOptions options = Options();
  options.job_id = *job;
  std::unique_ptr<SlurmPlacement> slurm = Allocate(options);
  ASSERT_NE(slurm, nullptr);
  EXPECT_FALSE(slurm->owns_job());
  absl::StatusOr<PlacedProcess> placed = slurm->Spawn(Sleep("prefill"));
  ASSERT_THAT(placed, IsOk());
  EXPECT_THAT(slurm->Stop(*placed, absl::Seconds(5)), IsOk());
  EXPECT_THAT(slurm->Release(), IsOk());
  EXPECT_EQ(JobState(*job), "RUNNING");

  options.job_id = "999999";
  EXPECT_THAT(SlurmPlacement::Create(options),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("999999")));
}

TEST_F(SlurmPlacementTest, AnUnreachableControllerIsUnavailableNotDead) {
  std::unique_ptr<SlurmPlacement> slurm = Allocate(Options());
  ASSERT_NE(slurm, nullptr);
  absl::StatusOr<PlacedProcess> placed = slurm->Spawn(Sleep("decode"));
  ASSERT_THAT(placed, IsOk());
  ASSERT_THAT(cluster_->StopController(), IsOk());
  EXPECT_THAT(slurm->Alive(*placed), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("")));
  ASSERT_THAT(cluster_->StartController(), IsOk());
  // The restarted controller recovered the step from its state directory.
  EXPECT_THAT(slurm->Alive(*placed), IsOkAnd(true));
  EXPECT_THAT(slurm->Stop(*placed, absl::Seconds(5)), IsOk());
  EXPECT_THAT(slurm->Release(), IsOk());
}

TEST_F(SlurmPlacementTest, AStepSlurmRefusesFailsWithSrunsMessage) {
  // (A single-node Slurm runs a step for any --nodelist on its one node, so
  // an unknown node cannot be the refusal tested here.)
  SlurmOptions options = Options();
  options.sharing = StepSharing::kExclusive;
  std::unique_ptr<SlurmPlacement> slurm = Allocate(options);
  ASSERT_NE(slurm, nullptr);
  PlacementRequest request = Sleep("prefill");
  request.devices = 17;
  EXPECT_THAT(
      slurm->Spawn(request),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               ::testing::AllOf(HasSubstr("srun exited"), HasSubstr("Invalid generic resource"))));
  EXPECT_THAT(Steps(slurm->job_id()), IsEmpty());
  EXPECT_THAT(slurm->Release(), IsOk());
}

}  // namespace
}  // namespace servelab::placement
