// The test cluster itself: it comes up idle with 16 GPUs, runs steps, and
// leaves no process behind, even when its daemons were killed under it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "tests/slurm/slurm_fixture.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"

namespace servelab::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::IsSupersetOf;

class SlurmClusterTest : public ::testing::Test {
 protected:
  void SetUp() override { cluster_ = StartClusterOrSkip(); }

  pid_t PidFile(const std::string& relative) {
    pid_t pid = 0;
    EXPECT_TRUE(absl::SimpleAtoi(
        absl::StripAsciiWhitespace(ReadFile(cluster_->dir() + "/" + relative)), &pid))
        << relative;
    return pid;
  }

  // A job with a `sleep` step, its srun in the background as the daemon's
  // would be; returns the job id.
  std::string StartSleepStep(std::unique_ptr<Process>& srun) {
    RunResult alloc = cluster_->Client({"salloc", "--no-shell", "--nodes=1"});
    EXPECT_EQ(alloc.exit_code, 0) << alloc.err;
    std::string job(absl::StripAsciiWhitespace(cluster_->Client({"squeue", "-h", "-o", "%A"}).out));
    srun =
        std::make_unique<Process>(std::vector<std::string>{"/usr/bin/srun", "--jobid=" + job,
                                                           "--overlap", "/bin/sleep", "300"},
                                  "", std::vector<std::string>{"SLURM_CONF=" + cluster_->conf()});
    EXPECT_TRUE(WaitFor(
        [&] {
          return !cluster_->Client({"squeue", "--steps", "-h", "-j", job}).out.empty();
        },
        absl::Seconds(20)));
    return job;
  }

  std::unique_ptr<SlurmCluster> cluster_;
};

TEST_F(SlurmClusterTest, StartsAnIdleNodeWithSixteenGpus) {
  RunResult sinfo = cluster_->Client({"sinfo", "-h", "-o", "%n %T %G"});
  EXPECT_EQ(sinfo.exit_code, 0) << sinfo.err;
  EXPECT_EQ(sinfo.out, "localhost idle gpu:16\n");
  RunResult step = cluster_->Client({"srun", "--gres=gpu:2", "/usr/bin/env"});
  EXPECT_EQ(step.exit_code, 0) << step.err;
  EXPECT_THAT(step.out, HasSubstr("CUDA_VISIBLE_DEVICES=0,1\n"));
  EXPECT_THAT(ReadFile(cluster_->conf()), HasSubstr("AuthInfo=socket=" + cluster_->dir()));
}

TEST_F(SlurmClusterTest, StopEndsJobsAndDaemons) {
  std::unique_ptr<Process> srun;
  StartSleepStep(srun);
  std::vector<pid_t> daemons = {PidFile("munge-run/munged.pid"), PidFile("run/slurmctld.pid"),
                                PidFile("run/slurmd.pid")};
  std::vector<pid_t> running = cluster_->Processes();
  EXPECT_THAT(running, IsSupersetOf(daemons));
  EXPECT_THAT(running, IsSupersetOf({srun->pid()}));

  ASSERT_THAT(cluster_->Stop(), IsOk());
  EXPECT_THAT(cluster_->Processes(), IsEmpty());
  EXPECT_FALSE(srun->Running());
  EXPECT_THAT(cluster_->Stop(), IsOk());
}

TEST_F(SlurmClusterTest, StopCleansUpAfterKilledDaemons) {
  std::unique_ptr<Process> srun;
  StartSleepStep(srun);
  // With slurmctld and slurmd gone, nothing can cancel the step the Slurm
  // way: slurmstepd and the task must still not outlive the cluster.
  kill(PidFile("run/slurmctld.pid"), SIGKILL);
  kill(PidFile("run/slurmd.pid"), SIGKILL);
  ASSERT_THAT(cluster_->Stop(), IsOk());
  EXPECT_THAT(cluster_->Processes(), IsEmpty());
  EXPECT_FALSE(srun->Running());
}

TEST(SlurmClusterScriptTest, RejectsAMissingCommand) {
  RunResult r =
      servelab::testing::Run({"/bin/bash", SourcePath("tests/slurm/slurm_cluster.sh"), "start"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("usage"));
}

}  // namespace
}  // namespace servelab::testing
