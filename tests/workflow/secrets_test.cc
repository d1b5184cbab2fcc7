// Secrets reach the instances by name only (issue 10, security): a spec's
// pass_env takes a variable from servelabd's own environment at launch, and
// its value appears in neither the store, the logs nor what the CLI shows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "servelab/v1/experiment.pb.h"
#include "tests/workflow/daemon_fixture.h"

namespace servelab {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunResult;
using testing::SourcePath;

constexpr char kSecret[] = "hf_s3cr3t-value-7d1f";

class SecretsTest : public DaemonFixture {
 protected:
  // Every file under the state directory: the DB, its WAL, the daemon's and
  // the instances' logs, the rendered config files.
  std::string FileHoldingTheSecret() const {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(state_dir_)) {
      if (!entry.is_regular_file()) continue;
      if (testing::ReadFile(entry.path().string()).find(kSecret) != std::string::npos) {
        return entry.path().string();
      }
    }
    return "";
  }
};

TEST_F(SecretsTest, PassedByNameReachesTheInstanceAndIsStoredNowhere) {
  StartDaemon({"--sim-time-scale", "0.05"}, {std::string("SERVELAB_TEST_TOKEN=") + kSecret});
  const std::string spec = SourcePath("deploy/examples/pd-quick.yaml");
  v1::Experiment base =
      WaitFinal(Submit({"-f", spec, "--set", "deployment.prefill.pass_env=[SERVELAB_TEST_TOKEN]"}));
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();

  // The prefill process has it; decode, which did not ask, does not.
  const int prefill_pid = Counter(base, v1::STAGE_LAUNCH_PREFILL, "pid");
  const int decode_pid = Counter(base, v1::STAGE_LAUNCH_DECODE, "pid");
  std::string environ = testing::ReadFile("/proc/" + std::to_string(prefill_pid) + "/environ");
  EXPECT_THAT(environ, HasSubstr(std::string("SERVELAB_TEST_TOKEN=") + kSecret));
  environ = testing::ReadFile("/proc/" + std::to_string(decode_pid) + "/environ");
  EXPECT_THAT(environ, Not(HasSubstr("SERVELAB_TEST_TOKEN")));

  // What the CLI shows names the variable, never its value.
  for (std::vector<std::string> args :
       {std::vector<std::string>{"-o", "json", "status", base.id()},
        std::vector<std::string>{"status", base.id()},
        std::vector<std::string>{"plan", "--base", base.id(), "--set", "workload.concurrency=4"}}) {
    RunResult shown = Cli(args);
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_THAT(shown.out + shown.err, Not(HasSubstr(kSecret))) << args[0];
    if (args[0] == "-o") {
      EXPECT_THAT(shown.out, HasSubstr("SERVELAB_TEST_TOKEN from servelabd's environment"));
    }
  }
  EXPECT_EQ(FileHoldingTheSecret(), "");
  StopDaemon();
  EXPECT_EQ(FileHoldingTheSecret(), "");  // Checkpointed into the DB file too.
}

TEST_F(SecretsTest, ANameServelabdLacksFailsPreflightBeforeAnyLaunch) {
  StartDaemon({"--sim-time-scale", "0.05"});
  const std::string spec = SourcePath("deploy/examples/pd-quick.yaml");
  v1::Experiment base = WaitFinal(Submit({"-f", spec}));
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  const int decode_pid = Counter(base, v1::STAGE_LAUNCH_DECODE, "pid");

  v1::Experiment missing = WaitFinal(
      Submit({"--base", base.id(), "--set", "deployment.decode.pass_env=[SERVELAB_NOT_SET_HERE]"}));
  EXPECT_EQ(missing.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(StageOf(missing, v1::STAGE_PREFLIGHT).status(), v1::STAGE_STATUS_FAILED);
  EXPECT_THAT(missing.blocker(), HasSubstr("deployment.decode.pass_env[0]"));
  EXPECT_THAT(missing.blocker(), HasSubstr("SERVELAB_NOT_SET_HERE"));
  EXPECT_NE(StageOf(missing, v1::STAGE_LAUNCH_DECODE).status(), v1::STAGE_STATUS_SUCCEEDED);
  EXPECT_TRUE(Alive(decode_pid));  // The hot decode was not stopped for it.
}

TEST_F(SecretsTest, ALiteralSecretInEnvIsRefusedAndNothingIsStored) {
  StartDaemon({"--sim-time-scale", "0.05"});
  const std::string spec = SourcePath("deploy/examples/pd-quick.yaml");
  RunResult refused = Cli(
      {"submit", "-f", spec, "--set", std::string("deployment.prefill.env.HF_TOKEN=") + kSecret});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("deployment.prefill.env.HF_TOKEN"));
  EXPECT_THAT(refused.err, HasSubstr("pass_env"));
  EXPECT_THAT(refused.err, Not(HasSubstr(kSecret)));
  RunResult list = Cli({"list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, Not(HasSubstr("exp-")));
  EXPECT_EQ(FileHoldingTheSecret(), "");
}

}  // namespace
}  // namespace servelab
