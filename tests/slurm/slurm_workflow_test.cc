// The engine acceptance scenarios with `placement: slurm` (issue 12): the
// real servelabd runs every serving instance as a job step of an allocation
// it creates on a real single-node Slurm (slurm_fixture.h), on servelab-sim,
// driven by the real CLI. What the daemon says is checked against Slurm's
// own view (squeue) and the sims' counters.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "servelab/v1/experiment.pb.h"
#include "tests/slurm/slurm_fixture.h"
#include "tests/testing/status_matchers.h"
#include "tests/workflow/daemon_fixture.h"

namespace servelab {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::RunResult;
using ::servelab::testing::SlurmCluster;
using ::servelab::testing::SourcePath;
using ::testing::HasSubstr;

const char kLayoutB[] = "deploy/examples/layouts/decode-layout-b.json";

class SlurmWorkflowTest : public DaemonFixture {
 protected:
  void SetUp() override {
    DaemonFixture::SetUp();
    cluster_ = testing::StartClusterOrSkip();
  }

  void TearDown() override {
    DaemonFixture::TearDown();
    if (cluster_ != nullptr) {
      EXPECT_THAT(cluster_->Stop(), IsOk());
    }
  }

  void StartDaemon() {
    DaemonFixture::StartDaemon({"--sim-time-scale", "0.05", "--slurm-conf", cluster_->conf()});
  }

  // pd-quick.yaml placed on the test cluster's one node. The sims listen on
  // loopback: tests send traffic nowhere else.
  std::string SubmitBase(std::vector<std::string> extra) {
    std::vector<std::string> args = {"-f",    SourcePath("deploy/examples/pd-quick.yaml"),
                                     "--set", "deployment.placement.kind=slurm",
                                     "--set", "deployment.placement.slurm.gres=gpu:16",
                                     "--set", "deployment.placement.slurm.listen_host=127.0.0.1",
                                     "--set", "deployment.prefill.node=localhost",
                                     "--set", "deployment.decode.node=localhost"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Submit(args);
  }

  // Step name prefix ("servelab-decode") -> step id ("1.4"), from squeue.
  std::map<std::string, std::string> Steps() const {
    RunResult r = cluster_->Client({"squeue", "--steps", "-h", "-o", "%i %j"});
    std::map<std::string, std::string> steps;
    for (absl::string_view line : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
      std::pair<std::string, std::string> row = absl::StrSplit(line, ' ');
      std::string side = row.second.substr(0, row.second.rfind('-'));
      steps[side] = row.first;
    }
    return steps;
  }

  std::string JobState(const std::string& job) const {
    RunResult r = cluster_->Client({"squeue", "-h", "-j", job, "-o", "%T"});
    return std::string(absl::StripAsciiWhitespace(r.out));
  }

  static std::string StepOf(const v1::Experiment& e, v1::StageName stage) {
    return absl::StrCat(Counter(e, stage, "slurm_job"), ".", Counter(e, stage, "slurm_step"));
  }

  std::unique_ptr<SlurmCluster> cluster_;
};

TEST_F(SlurmWorkflowTest, BaseThenConcurrencyDeltaThenDecodeDeltaThenRelease) {
  StartDaemon();
  // 1. The base: the daemon creates an allocation and runs P, D and the
  // router as three steps of it.
  v1::Experiment base = WaitFinal(SubmitBase({}));
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  EXPECT_EQ(base.result().whole().requests_completed(), 96);
  std::map<std::string, std::string> steps = Steps();
  ASSERT_EQ(steps.size(), 3u) << cluster_->LogTails();
  EXPECT_EQ(steps["servelab-prefill"], StepOf(base, v1::STAGE_LAUNCH_PREFILL));
  EXPECT_EQ(steps["servelab-decode"], StepOf(base, v1::STAGE_LAUNCH_DECODE));
  EXPECT_EQ(steps["servelab-router"], StepOf(base, v1::STAGE_LAUNCH_ROUTER));
  const std::string job = absl::StrCat(Counter(base, v1::STAGE_LAUNCH_PREFILL, "slurm_job"));
  EXPECT_EQ(JobState(job), "RUNNING");
  RunResult summary = Cli({"summary"});
  EXPECT_THAT(summary.out, HasSubstr(absl::StrCat("Slurm step ", steps["servelab-decode"])));

  // 2. A concurrency delta reuses every step: the same step ids run.
  v1::Experiment c8 = WaitFinal(Submit({"--base", base.id(), "--set", "workload.concurrency=8"}));
  ASSERT_EQ(c8.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << c8.blocker();
  for (v1::StageName s :
       {v1::STAGE_LAUNCH_PREFILL, v1::STAGE_LAUNCH_DECODE, v1::STAGE_LAUNCH_ROUTER}) {
    EXPECT_EQ(StageOf(c8, s).status(), v1::STAGE_STATUS_REUSED) << v1::StageName_Name(s);
  }
  EXPECT_EQ(Steps(), steps);

  // 3. A decode-layout delta relaunches decode's step only.
  v1::Experiment layout =
      WaitFinal(Submit({"--base", c8.id(), "--set",
                        absl::StrCat("deployment.decode.expert_layout=", SourcePath(kLayoutB))}));
  ASSERT_EQ(layout.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << layout.blocker();
  EXPECT_EQ(StageOf(layout, v1::STAGE_LAUNCH_PREFILL).status(), v1::STAGE_STATUS_REUSED);
  EXPECT_EQ(StageOf(layout, v1::STAGE_LAUNCH_DECODE).status(), v1::STAGE_STATUS_SUCCEEDED);
  std::map<std::string, std::string> after = Steps();
  EXPECT_EQ(after["servelab-prefill"], steps["servelab-prefill"]);
  EXPECT_NE(after["servelab-decode"], steps["servelab-decode"]);
  EXPECT_EQ(after["servelab-decode"], StepOf(layout, v1::STAGE_LAUNCH_DECODE));

  // 4. Release ends the steps and the allocation the daemon created.
  RunResult release = Cli({"release"});
  ASSERT_EQ(release.exit_code, 0) << release.err;
  EXPECT_THAT(release.out, HasSubstr(absl::StrCat("Slurm job ", job)));
  EXPECT_TRUE(Steps().empty());
  EXPECT_TRUE(testing::WaitFor([&] { return JobState(job) != "RUNNING"; }, absl::Seconds(30)));
}

TEST_F(SlurmWorkflowTest, KilledDaemonReadoptsTheStepsAndResumes) {
  StartDaemon();
  const std::string id =
      SubmitBase({"--set", "workload.num_requests=600", "--set", "workload.concurrency=4"});
  RunResult sent = Cli({"wait", id, "--until", "sent", "--timeout", "100s"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  ASSERT_TRUE(WaitForFormalRecords());
  const std::map<std::string, std::string> steps = Steps();
  ASSERT_EQ(steps.size(), 3u);
  KillDaemon();

  StartDaemon();
  v1::Experiment e = Status(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::LOAD_INTERRUPTED) << e.blocker();
  EXPECT_EQ(Steps(), steps);  // Re-adopted: nothing stopped.
  ASSERT_EQ(Cli({"resume", id}).exit_code, 0);
  e = WaitFinal(id);
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  EXPECT_EQ(Counter(e, v1::STAGE_FORMAL_LOAD, "attempt"), 2);
  EXPECT_EQ(StageOf(e, v1::STAGE_LAUNCH_PREFILL).attempt(), 1);
  EXPECT_EQ(Steps(), steps);

  // The restarted daemon still knows it created the allocation.
  const std::string job = absl::StrCat(Counter(e, v1::STAGE_LAUNCH_PREFILL, "slurm_job"));
  RunResult release = Cli({"release"});
  ASSERT_EQ(release.exit_code, 0) << release.err;
  EXPECT_THAT(release.out, HasSubstr(absl::StrCat("ended Slurm job ", job)));
  EXPECT_TRUE(testing::WaitFor([&] { return JobState(job) != "RUNNING"; }, absl::Seconds(30)));
}

TEST_F(SlurmWorkflowTest, AnAllocationSlurmRefusesFailsBeforeAnyRequest) {
  StartDaemon();
  v1::Experiment e =
      WaitFinal(SubmitBase({"--set", "deployment.placement.slurm.partition=nosuch"}));
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::NO_REQUESTS_SENT);
  EXPECT_THAT(e.blocker(), HasSubstr("salloc"));
  EXPECT_THAT(e.blocker(), HasSubstr("nosuch"));
  EXPECT_EQ(e.progress().formal_requests_sent(), 0);
  RunResult jobs = cluster_->Client({"squeue", "-h"});
  EXPECT_EQ(jobs.out, "") << "a job was left behind";
}

TEST_F(SlurmWorkflowTest, AStepCancelledFromOutsideIsLaunchedAgain) {
  StartDaemon();
  v1::Experiment base = WaitFinal(SubmitBase({}));
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  const std::map<std::string, std::string> steps = Steps();
  RunResult scancel = cluster_->Client({"scancel", steps.at("servelab-decode")});
  ASSERT_EQ(scancel.exit_code, 0) << scancel.err;
  ASSERT_TRUE(
      testing::WaitFor([&] { return Steps().count("servelab-decode") == 0; }, absl::Seconds(30)));

  // Like a crashed instance: the next experiment sees it gone and launches
  // decode again (the router with it, whose upstream changed); prefill is reused.
  v1::Experiment next = WaitFinal(Submit({"--base", base.id(), "--set", "workload.concurrency=8"}));
  ASSERT_EQ(next.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << next.blocker();
  EXPECT_EQ(StageOf(next, v1::STAGE_LAUNCH_PREFILL).status(), v1::STAGE_STATUS_REUSED);
  EXPECT_EQ(StageOf(next, v1::STAGE_LAUNCH_DECODE).status(), v1::STAGE_STATUS_SUCCEEDED);
  RunResult events = testing::Run({"/usr/bin/sqlite3", state_dir_ + "/servelab.db",
                                   "SELECT detail FROM events WHERE kind = 'instance_lost' AND "
                                   "experiment_id = '" +
                                       next.id() + "'"});
  ASSERT_EQ(events.exit_code, 0) << events.err;
  EXPECT_THAT(events.out,
              HasSubstr(absl::StrCat("decode instance (Slurm step ", steps.at("servelab-decode"),
                                     " on node localhost")));
  std::map<std::string, std::string> after = Steps();
  EXPECT_EQ(after["servelab-prefill"], steps.at("servelab-prefill"));
  EXPECT_NE(after["servelab-decode"], steps.at("servelab-decode"));
}

}  // namespace
}  // namespace servelab
