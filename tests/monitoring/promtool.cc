#include "tests/monitoring/promtool.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

extern char** environ;

namespace servelab::testing {
namespace {

// testing::Run gives its children /dev/null as stdin; promtool 2.42 reads
// the exposition from stdin only, so this one spawn opens a file there.
int RunWithStdin(const std::vector<std::string>& argv, const std::string& stdin_path,
                 const std::string& output_path, absl::Duration timeout) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<std::string> args = argv;
  std::vector<char*> c_args;
  for (std::string& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, c_args[0], &actions, nullptr, c_args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
    }
    if (absl::Now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

PromtoolResult CheckMetrics(const std::string& exposition) {
  TempDir dir;
  WriteFile(dir.File("metrics.txt"), exposition);
  PromtoolResult result;
  result.exit_code = RunWithStdin({kPromtool, "check", "metrics"}, dir.File("metrics.txt"),
                                  dir.File("promtool.out"), absl::Seconds(60));
  result.output = ReadFile(dir.File("promtool.out"));
  for (absl::string_view line : absl::StrSplit(result.output, '\n', absl::SkipWhitespace())) {
    result.problems.emplace_back(absl::StripAsciiWhitespace(line));
  }
  return result;
}

std::vector<std::string> ProblemsBesidesEngineColons(const PromtoolResult& result) {
  std::vector<std::string> left;
  for (const std::string& problem : result.problems) {
    const bool engine_name =
        absl::StartsWith(problem, "vllm:") || absl::StartsWith(problem, "sglang:");
    if (engine_name && absl::EndsWith(problem, " metric names should not contain ':'")) continue;
    left.push_back(problem);
  }
  return left;
}

bool RequirePromtool() {
  if (access(kPromtool, X_OK) == 0) return true;
  ADD_FAILURE() << kPromtool
                << " not found: install Debian's prometheus package "
                   "(deploy/setup.sh does: apt-get install --no-install-recommends prometheus)";
  return false;
}

}  // namespace servelab::testing
