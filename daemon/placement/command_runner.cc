#include "daemon/placement/command_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "daemon/placement/process_launcher.h"

namespace servelab::placement {
namespace {

// Closes a descriptor on every path out of RunCommand.
class Fd {
 public:
  Fd() = default;
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int* address() { return &fd_; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read;
  Fd write;
};

bool MakePipe(Pipe& pipe) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  *pipe.read.address() = fds[0];
  *pipe.write.address() = fds[1];
  return true;
}

std::vector<std::string> Environment(const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> merged;
  for (const char* name : placement::kInheritedEnv) {
    if (const char* value = std::getenv(name)) merged[name] = value;
  }
  for (const auto& [name, value] : env) merged[name] = value;
  std::vector<std::string> out;
  for (const auto& [name, value] : merged) out.push_back(absl::StrCat(name, "=", value));
  return out;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The daemon blocks or ignores signals for its own reasons (sigwait,
// SIGPIPE); a tool that inherited that mask could not be killed by SIGTERM.
void CleanSignals(posix_spawnattr_t& attr) {
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int sig = 1; sig < 32; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaddset(&defaults, sig);
  }
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
}

absl::StatusOr<pid_t> SpawnWithPipes(const std::vector<std::string>& argv,
                                     const std::map<std::string, std::string>& env, Pipe& out,
                                     Pipe& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write.get(), STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  CleanSignals(attr);
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = Environment(env);
  std::vector<char*> c_args = CStrings(args);
  std::vector<char*> c_env = CStrings(envs);
  pid_t pid = 0;
  int error = posix_spawn(&pid, argv[0].c_str(), &actions, &attr, c_args.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (error != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot execute ", argv[0], ": ", std::strerror(error)));
  }
  return pid;
}

// Reads both pipes until they close or `deadline` passes; false on timeout.
bool ReadUntilClosed(Fd& out_fd, Fd& err_fd, absl::Time deadline, CommandResult& result) {
  char buffer[4096];
  while (out_fd.get() >= 0 || err_fd.get() >= 0) {
    int64_t wait_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (wait_ms <= 0) return false;
    pollfd fds[2] = {{out_fd.get(), POLLIN, 0}, {err_fd.get(), POLLIN, 0}};
    int ready = poll(fds, 2, static_cast<int>(std::min<int64_t>(wait_ms, 1000)));
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    Fd* sources[2] = {&out_fd, &err_fd};
    std::string* sinks[2] = {&result.out, &result.err};
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        sources[i]->Reset();
      }
    }
  }
  return true;
}

int WaitExit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const std::map<std::string, std::string>& env,
                                         absl::Duration timeout) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  if (argv[0].empty() || argv[0][0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("argv[0] must be an absolute path, got \"", argv[0], "\""));
  }
  Pipe out, err;
  if (!MakePipe(out) || !MakePipe(err)) {
    return absl::ResourceExhaustedError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  absl::StatusOr<pid_t> pid = SpawnWithPipes(argv, env, out, err);
  if (!pid.ok()) return pid.status();
  // Only the child may hold the write ends, or the reads never see EOF.
  out.write.Reset();
  err.write.Reset();
  CommandResult result;
  if (!ReadUntilClosed(out.read, err.read, absl::Now() + timeout, result)) {
    kill(*pid, SIGKILL);
    WaitExit(*pid);
    return absl::DeadlineExceededError(absl::StrCat(
        absl::StrJoin(argv, " "), " still running after ", absl::FormatDuration(timeout)));
  }
  result.exit_code = WaitExit(*pid);
  return result;
}

absl::StatusOr<std::string> FindInPath(const std::string& name, const std::string& search_path) {
  for (absl::string_view dir : absl::StrSplit(search_path, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (candidate[0] == '/' && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(name, " not found in PATH \"", search_path, "\""));
}

}  // namespace servelab::placement
