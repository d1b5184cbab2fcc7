#include "daemon/placement/process_launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::placement {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::ReadFile;
using ::servelab::testing::StatusIs;
using ::servelab::testing::TempDir;
using ::servelab::testing::WaitFor;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ProcessLauncherTest, SleepRunsInItsOwnSessionAndStops) {
  TempDir dir;
  absl::StatusOr<StartedProcess> p = StartProcess({"/bin/sleep", "100"}, {}, dir.File("s.log"));
  ASSERT_THAT(p, IsOk());
  EXPECT_GT(p->start_ticks, 0);
  EXPECT_TRUE(Alive(p->pid, p->start_ticks));
  EXPECT_EQ(getsid(p->pid), p->pid);
  EXPECT_EQ(getpgid(p->pid), p->pid);
  EXPECT_THAT(ProcessStartTicks(p->pid), IsOk());
  EXPECT_EQ(*ProcessStartTicks(p->pid), p->start_ticks);

  EXPECT_THAT(Stop(p->pid, p->start_ticks, absl::Seconds(5)), IsOk());
  EXPECT_FALSE(Alive(p->pid, p->start_ticks));
  // Reaped: no zombie left behind.
  EXPECT_THAT(ProcessStartTicks(p->pid), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  // Stopping again is fine.
  EXPECT_THAT(Stop(p->pid, p->start_ticks, absl::Seconds(1)), IsOk());
}

TEST(ProcessLauncherTest, StartTimeMismatchIsNotAliveAndIsNotSignalled) {
  TempDir dir;
  absl::StatusOr<StartedProcess> p = StartProcess({"/bin/sleep", "100"}, {}, dir.File("s.log"));
  ASSERT_THAT(p, IsOk());
  EXPECT_FALSE(Alive(p->pid, p->start_ticks + 1));
  // A "recycled" pid is left alone.
  EXPECT_THAT(Stop(p->pid, p->start_ticks + 1, absl::Seconds(1)), IsOk());
  EXPECT_TRUE(Alive(p->pid, p->start_ticks));
  EXPECT_THAT(Stop(p->pid, p->start_ticks, absl::Seconds(5)), IsOk());
}

TEST(ProcessLauncherTest, ExitedChildIsNotAlive) {
  TempDir dir;
  absl::StatusOr<StartedProcess> p = StartProcess({"/bin/true"}, {}, dir.File("t.log"));
  ASSERT_THAT(p, IsOk());
  // A zombie counts as not alive (and is reaped by Alive).
  EXPECT_TRUE(WaitFor([&] { return !Alive(p->pid, p->start_ticks); }, absl::Seconds(10)));
}

TEST(ProcessLauncherTest, OutputAndEnvironment) {
  TempDir dir;
  std::string log = dir.File("logs/env.log");  // The directory is created.
  setenv("SERVELAB_TEST_SECRET", "leak", 1);
  absl::StatusOr<StartedProcess> p = StartProcess({"/usr/bin/env"}, {{"FOO", "bar"}}, log);
  ASSERT_THAT(p, IsOk());
  ASSERT_TRUE(WaitFor([&] { return !Alive(p->pid, p->start_ticks); }, absl::Seconds(10)));
  std::string out = ReadFile(log);
  EXPECT_THAT(out, HasSubstr("FOO=bar\n"));
  EXPECT_THAT(out, HasSubstr("--- servelab launch"));
  EXPECT_THAT(out, Not(HasSubstr("SERVELAB_TEST_SECRET")));
  if (getenv("PATH") != nullptr) {
    EXPECT_THAT(out, HasSubstr("PATH="));
  }

  // Appended, not truncated; stderr goes to the same file; stdin is empty.
  p = StartProcess({"/bin/cat", "/nonexistent-file", "-"}, {}, log);
  ASSERT_THAT(p, IsOk());
  ASSERT_TRUE(WaitFor([&] { return !Alive(p->pid, p->start_ticks); }, absl::Seconds(10)));
  out = ReadFile(log);
  EXPECT_THAT(out, HasSubstr("FOO=bar\n"));
  EXPECT_THAT(out, HasSubstr("/nonexistent-file"));
  EXPECT_EQ(LogTail(log, 1), "/bin/cat: /nonexistent-file: No such file or directory");
}

TEST(ProcessLauncherTest, SigkillAfterGraceWhenSigtermIsIgnored) {
  TempDir dir;
  absl::StatusOr<StartedProcess> p = StartProcess(
      {"/usr/bin/env", "--ignore-signal=TERM", "/bin/sleep", "100"}, {}, dir.File("i.log"));
  ASSERT_THAT(p, IsOk());
  // Signal only once env has set SIGTERM to ignored and exec'd sleep.
  ASSERT_TRUE(
      WaitFor([&] { return ReadFile(absl::StrCat("/proc/", p->pid, "/comm")) == "sleep\n"; },
              absl::Seconds(10)));
  absl::Time start = absl::Now();
  EXPECT_THAT(Stop(p->pid, p->start_ticks, absl::Milliseconds(300)), IsOk());
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(300));
  EXPECT_FALSE(Alive(p->pid, p->start_ticks));
}

TEST(ProcessLauncherTest, WorksOnAProcessThatIsNotOurChild) {
  TempDir dir;
  // A child starts the process and exits, so it is re-parented away from us,
  // like an instance re-adopted by a restarted daemon.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t helper = fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    absl::StatusOr<StartedProcess> p = StartProcess({"/bin/sleep", "100"}, {}, dir.File("o.log"));
    StartedProcess out = p.ok() ? *p : StartedProcess{};
    (void)!write(fds[1], &out, sizeof(out));
    _exit(0);
  }
  close(fds[1]);
  StartedProcess orphan;
  ASSERT_EQ(read(fds[0], &orphan, sizeof(orphan)), static_cast<ssize_t>(sizeof(orphan)));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(helper, &status, 0), helper);
  ASSERT_GT(orphan.pid, 0);

  EXPECT_TRUE(Alive(orphan.pid, orphan.start_ticks));
  EXPECT_EQ(waitpid(orphan.pid, &status, WNOHANG), -1);  // Not ours.
  EXPECT_THAT(Stop(orphan.pid, orphan.start_ticks, absl::Seconds(5)), IsOk());
  EXPECT_FALSE(Alive(orphan.pid, orphan.start_ticks));
}

TEST(ProcessLauncherTest, BadArguments) {
  TempDir dir;
  EXPECT_THAT(StartProcess({}, {}, dir.File("x.log")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty argv")));
  EXPECT_THAT(StartProcess({"sleep", "1"}, {}, dir.File("x.log")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("absolute")));
  EXPECT_THAT(StartProcess({"/nonexistent/servelab-sim"}, {}, dir.File("x.log")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cannot execute /nonexistent/servelab-sim")));
  EXPECT_THAT(StartProcess({"/bin/true"}, {}, "/proc/forbidden/x.log"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("log")));
}

TEST(ProcessLauncherTest, LogTail) {
  TempDir dir;
  testing::WriteFile(dir.File("a.log"), "one\ntwo\nthree\n");
  EXPECT_EQ(LogTail(dir.File("a.log"), 2), "two\nthree");
  EXPECT_EQ(LogTail(dir.File("a.log"), 10), "one\ntwo\nthree");
  EXPECT_EQ(LogTail(dir.File("missing.log"), 3), "");
}

}  // namespace
}  // namespace servelab::placement
