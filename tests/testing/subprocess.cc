#include "tests/testing/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace servelab::testing {
namespace {

std::vector<std::string> MergedEnv(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    std::string key = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& o : overrides) overridden |= o.substr(0, o.find('=')) == key;
    if (!overridden) env.push_back(entry);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Spawns argv with stdout/stderr redirected to the given paths. Each child
// gets its own process group so a test can kill what it started.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env_overrides,
            const std::string& out_path, const std::string& err_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> args = argv;
  std::vector<std::string> env = MergedEnv(env_overrides);
  std::vector<char*> c_args = CStrings(args);
  std::vector<char*> c_env = CStrings(env);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, c_args[0], &actions, &attr, c_args.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error(absl::StrCat("posix_spawn ", argv[0], ": ", rc));
  return pid;
}

// Waits for pid up to timeout; returns true with *exit_code set when reaped.
bool WaitPid(pid_t pid, absl::Duration timeout, int* exit_code) {
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      *exit_code = DecodeWaitStatus(status);
      return true;
    }
    if (absl::Now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

std::string BinPath(const std::string& name) { return absl::StrCat(SERVELAB_BIN_DIR, "/", name); }

std::string SourcePath(const std::string& relative) {
  return absl::StrCat(SERVELAB_SOURCE_DIR, "/", relative);
}

std::vector<std::string> WithoutRealtimePrivilege(std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"/usr/bin/prlimit", "--rtprio=0", "--"});
  if (geteuid() == 0) {
    argv.insert(argv.begin(), {"/usr/bin/setpriv", "--bounding-set", "-sys_nice", "--"});
  }
  return argv;
}

RunResult Run(const std::vector<std::string>& argv, const std::vector<std::string>& env_overrides,
              absl::Duration timeout) {
  char out_tmpl[] = "/tmp/servelab-run-out.XXXXXX";
  char err_tmpl[] = "/tmp/servelab-run-err.XXXXXX";
  close(mkstemp(out_tmpl));
  close(mkstemp(err_tmpl));
  RunResult result;
  pid_t pid = Spawn(argv, env_overrides, out_tmpl, err_tmpl);
  if (!WaitPid(pid, timeout, &result.exit_code)) {
    kill(-pid, SIGKILL);
    int ignored;
    WaitPid(pid, absl::Seconds(5), &ignored);
    result.exit_code = -1;
  }
  result.out = ReadFile(out_tmpl);
  result.err = ReadFile(err_tmpl);
  unlink(out_tmpl);
  unlink(err_tmpl);
  return result;
}

Process::Process(const std::vector<std::string>& argv, const std::string& log_prefix,
                 const std::vector<std::string>& env_overrides) {
  std::string out = log_prefix.empty() ? "/dev/null" : log_prefix + ".out";
  std::string err = log_prefix.empty() ? "/dev/null" : log_prefix + ".err";
  pid_ = Spawn(argv, env_overrides, out, err);
}

Process::~Process() {
  if (!reaped_ && pid_ > 0) {
    kill(-pid_, SIGKILL);
    Wait(absl::Seconds(5));
  }
}

bool Process::Running() {
  if (reaped_) return false;
  if (WaitPid(pid_, absl::ZeroDuration(), &exit_code_)) {
    reaped_ = true;
    return false;
  }
  return true;
}

void Process::Signal(int signo) {
  if (!reaped_) kill(pid_, signo);
}

int Process::Wait(absl::Duration timeout) {
  if (reaped_) return exit_code_;
  if (WaitPid(pid_, timeout, &exit_code_)) {
    reaped_ = true;
    return exit_code_;
  }
  return -1;
}

bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

char ProcessState(int pid, int tid) {
  std::string path = tid == 0 ? absl::StrCat("/proc/", pid, "/stat")
                              : absl::StrCat("/proc/", pid, "/task/", tid, "/stat");
  std::string stat = ReadFile(path);
  // The command name in parentheses may itself hold spaces and parentheses.
  size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? 0 : stat[close + 2];
}

bool StopProcess(int pid, absl::Duration timeout) {
  if (kill(pid, SIGSTOP) != 0) return false;
  return WaitFor(
      [&] {
        std::error_code error;
        for (const auto& task :
             std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"), error)) {
          int tid = 0;
          if (!absl::SimpleAtoi(task.path().filename().string(), &tid)) continue;
          if (ProcessState(pid, tid) != 'T') return false;
        }
        return !error;
      },
      timeout);
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

}  // namespace servelab::testing
