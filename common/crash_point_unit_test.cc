// Crash points in-process: the list, arming from the environment, and the
// kill itself (in a forked child, which the test watches die by SIGKILL).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "common/crash_points.h"

namespace servelab {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

TEST(CrashPointsTest, ListsEveryStageAndTheDurableWritesOnce) {
  const std::vector<std::string>& all = AllCrashPoints();
  EXPECT_THAT(all, Contains("ledger.commit.before"));
  EXPECT_THAT(all, Contains("stage.formal_load.begin"));
  EXPECT_THAT(all, Contains("stage.launch_decode.end"));
  EXPECT_THAT(all, Contains("instance.launch.after_spawn"));
  EXPECT_THAT(all, Contains("records.batch.after"));
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size());
}

// Runs `fn` in a child with SERVELAB_CRASH_AT=`armed`; its wait status.
int InChild(const char* armed, void (*fn)()) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("SERVELAB_CRASH_AT", armed, 1);
    if (!ArmCrashPointFromEnvironment().ok()) _exit(3);
    fn();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(CrashPointsTest, KillsOnTheArmedPassOnly) {
  int third = InChild("ledger.commit.after@3", [] {
    CrashPoint("ledger.commit.after");
    CrashPoint("ledger.commit.before");
    CrashPoint("ledger.commit.after");
    _exit(7);  // Not reached if the third pass below kills.
  });
  EXPECT_TRUE(WIFEXITED(third) && WEXITSTATUS(third) == 7) << "killed before the third pass";
  int killed = InChild("ledger.commit.after@2", [] {
    CrashPoint("ledger.commit.after");
    CrashPoint("ledger.commit.after");
  });
  EXPECT_TRUE(WIFSIGNALED(killed) && WTERMSIG(killed) == SIGKILL);
}

TEST(CrashPointsTest, UnarmedDoesNothing) {
  unsetenv("SERVELAB_CRASH_AT");
  EXPECT_TRUE(ArmCrashPointFromEnvironment().ok());
  CrashPoint("ledger.commit.after");  // Returns.
  SUCCEED();
}

TEST(CrashPointsTest, RefusesUnknownNamesAndBadPasses) {
  for (const char* bad : {"no.such.point", "ledger.commit.after@0", "ledger.commit.after@x"}) {
    setenv("SERVELAB_CRASH_AT", bad, 1);
    absl::Status status = ArmCrashPointFromEnvironment();
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << bad;
    EXPECT_THAT(std::string(status.message()), HasSubstr("SERVELAB_CRASH_AT")) << bad;
  }
  unsetenv("SERVELAB_CRASH_AT");
}

}  // namespace
}  // namespace servelab
