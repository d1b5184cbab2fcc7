#include "daemon/placement/command_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "tests/testing/status_matchers.h"

namespace servelab::placement {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

TEST(RunCommandTest, CapturesOutputAndExitCode) {
  absl::StatusOr<CommandResult> r =
      RunCommand({"/bin/ls", "/", "/no/such/dir"}, {}, absl::Seconds(10));
  ASSERT_THAT(r, IsOk());
  EXPECT_NE(r->exit_code, 0);
  EXPECT_THAT(r->out, HasSubstr("usr"));
  EXPECT_THAT(r->err, HasSubstr("/no/such/dir"));
}

TEST(RunCommandTest, GivesACleanEnvironmentPlusTheGivenVariables) {
  absl::StatusOr<CommandResult> r = RunCommand(
      {"/usr/bin/env"}, {{"SLURM_CONF", "/x/slurm.conf,with,commas"}}, absl::Seconds(10));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_THAT(r->out, HasSubstr("SLURM_CONF=/x/slurm.conf,with,commas\n"));
  EXPECT_THAT(r->out, ::testing::Not(HasSubstr("GTEST")));
}

TEST(RunCommandTest, KillsWhatRunsTooLong) {
  absl::Time start = absl::Now();
  EXPECT_THAT(RunCommand({"/bin/sleep", "30"}, {}, absl::Milliseconds(300)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("sleep")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(RunCommandTest, RejectsRelativeAndMissingBinaries) {
  EXPECT_THAT(RunCommand({"sleep", "1"}, {}, absl::Seconds(1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("absolute")));
  EXPECT_THAT(RunCommand({}, {}, absl::Seconds(1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT(RunCommand({"/no/such/binary"}, {}, absl::Seconds(1)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("/no/such/binary")));
}

TEST(FindInPathTest, FindsTheFirstExecutable) {
  EXPECT_EQ(*FindInPath("sleep", "/no/such:/usr/bin:/bin"), "/usr/bin/sleep");
  EXPECT_THAT(FindInPath("no-such-tool", "/usr/bin:relative"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/usr/bin:relative")));
}

}  // namespace
}  // namespace servelab::placement
