#include "daemon/placement/process_launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace servelab::placement {
namespace {

constexpr absl::Duration kPollInterval = absl::Milliseconds(10);
// How long a SIGKILLed group may take to disappear before we give up.
constexpr absl::Duration kKillWait = absl::Seconds(10);

std::string ErrnoText(int error) { return std::strerror(error); }

// Fields of /proc/PID/stat after the command name. The name is in
// parentheses and may itself contain spaces and parentheses, so the fields
// start after the *last* ')'.
struct ProcStat {
  char state = '?';
  int64_t session = 0;
  int64_t start_ticks = 0;
};

absl::StatusOr<ProcStat> ReadProcStat(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!in || !std::getline(in, line)) {
    return absl::NotFoundError(absl::StrCat("no process ", pid));
  }
  size_t close = line.rfind(')');
  if (close == std::string::npos) return absl::InternalError("malformed /proc stat: " + line);
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(line).substr(close + 1), ' ', absl::SkipEmpty());
  // fields[0] is field 3 (state); field 22 (starttime) is fields[19].
  ProcStat stat;
  if (fields.size() < 20 || fields[0].empty() || !absl::SimpleAtoi(fields[19], &stat.start_ticks)) {
    return absl::InternalError("malformed /proc stat: " + line);
  }
  stat.state = fields[0][0];
  absl::SimpleAtoi(fields[3], &stat.session);  // Field 6.
  return stat;
}

// Reaps `pid` if it is a child of ours that has exited; harmless otherwise
// (ECHILD for a process we did not start).
void ReapIfChild(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) < 0 && errno == EINTR) {
  }
}

// Neither the leader nor any member of its process group is left.
bool GroupGone(pid_t pid, int64_t start_ticks) {
  if (Alive(pid, start_ticks)) return false;
  return kill(-pid, 0) != 0 && errno == ESRCH;
}

bool WaitGroupGone(pid_t pid, int64_t start_ticks, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (!GroupGone(pid, start_ticks)) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(kPollInterval);
  }
  return true;
}

void SignalGroup(pid_t pid, int signo) {
  // The group may already be gone while the leader lingers as a zombie.
  if (kill(-pid, signo) != 0) kill(pid, signo);
}

// Owns the posix_spawn attribute objects for one StartProcess call.
class SpawnSetup {
 public:
  SpawnSetup() {
    posix_spawnattr_init(&attr_);
    posix_spawn_file_actions_init(&actions_);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attr_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  posix_spawnattr_t attr_;
  posix_spawn_file_actions_t actions_;
};

}  // namespace

absl::StatusOr<StartedProcess> StartProcess(const std::vector<std::string>& argv,
                                            const std::map<std::string, std::string>& env,
                                            const std::string& log_path) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  if (argv[0].empty() || argv[0][0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("argv[0] must be an absolute path, got \"", argv[0], "\""));
  }
  if (log_path.empty()) return absl::InvalidArgumentError("empty log path");

  std::error_code ec;
  std::filesystem::path log_dir = std::filesystem::path(log_path).parent_path();
  if (!log_dir.empty()) std::filesystem::create_directories(log_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create log directory ", log_dir.string(), ": ", ec.message()));
  }
  // Opened here rather than as a spawn file action so that a bad log path is
  // told apart from a bad binary.
  int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open log file ", log_path, ": ", ErrnoText(errno)));
  }
  // Logs are appended across relaunches; a banner separates the runs.
  std::string banner = absl::StrCat("--- servelab launch at ", absl::FormatTime(absl::Now()), ": ",
                                    absl::StrJoin(argv, " "), "\n");
  if (write(log_fd, banner.data(), banner.size()) < 0) {
    // Not fatal: the process output is what matters.
  }

  std::map<std::string, std::string> merged;
  for (const char* name : kInheritedEnv) {
    if (const char* value = std::getenv(name)) merged[name] = value;
  }
  for (const auto& [name, value] : env) merged[name] = value;
  std::vector<std::string> env_strings;
  env_strings.reserve(merged.size());
  for (const auto& [name, value] : merged) env_strings.push_back(absl::StrCat(name, "=", value));
  std::vector<char*> envp, args;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  SpawnSetup setup;
  // The daemon blocks or ignores signals for its own reasons (sigwait,
  // SIGPIPE); the child starts with a clean signal state.
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int sig = 1; sig < 32; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaddset(&defaults, sig);
  }
  posix_spawnattr_setflags(&setup.attr_,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setsigmask(&setup.attr_, &empty);
  posix_spawnattr_setsigdefault(&setup.attr_, &defaults);
  posix_spawn_file_actions_addopen(&setup.actions_, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions_, log_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&setup.actions_, log_fd, STDERR_FILENO);
  // Never leak the daemon's sockets, database or lock file into an instance.
  posix_spawn_file_actions_addclosefrom_np(&setup.actions_, STDERR_FILENO + 1);

  pid_t pid = 0;
  int error =
      posix_spawn(&pid, argv[0].c_str(), &setup.actions_, &setup.attr_, args.data(), envp.data());
  close(log_fd);
  if (error != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot execute ", argv[0], ": ", ErrnoText(error)));
  }
  // The child stays in /proc (at worst as a zombie) until we reap it, so its
  // start time is always readable here.
  absl::StatusOr<ProcStat> stat = ReadProcStat(pid);
  if (!stat.ok()) {
    return absl::InternalError(absl::StrCat(
        "started pid ", pid, " but cannot read its start time: ", stat.status().message()));
  }
  return StartedProcess{pid, stat->start_ticks};
}

absl::StatusOr<int64_t> ProcessStartTicks(pid_t pid) {
  absl::StatusOr<ProcStat> stat = ReadProcStat(pid);
  if (!stat.ok()) return stat.status();
  return stat->start_ticks;
}

bool Alive(pid_t pid, int64_t start_ticks) {
  if (pid <= 0) return false;
  absl::StatusOr<ProcStat> stat = ReadProcStat(pid);
  if (!stat.ok() || stat->start_ticks != start_ticks) return false;
  if (stat->state == 'Z' || stat->state == 'X') {
    ReapIfChild(pid);
    return false;
  }
  return true;
}

absl::Status Stop(pid_t pid, int64_t start_ticks, absl::Duration grace) {
  if (pid <= 0) return absl::InvalidArgumentError(absl::StrCat("bad pid ", pid));
  // Identity first: never signal a group whose leader is not our instance
  // (the pid may have been recycled).
  if (!Alive(pid, start_ticks)) return absl::OkStatus();
  SignalGroup(pid, SIGTERM);
  if (WaitGroupGone(pid, start_ticks, grace)) return absl::OkStatus();
  SignalGroup(pid, SIGKILL);
  if (WaitGroupGone(pid, start_ticks, kKillWait)) return absl::OkStatus();
  return absl::DeadlineExceededError(absl::StrCat(
      "process group ", pid, " still present ", absl::FormatDuration(kKillWait), " after SIGKILL"));
}

std::vector<StartedProcess> FindSessionLeadersWithEnv(const std::string& name,
                                                      const std::string& value) {
  const std::string wanted = absl::StrCat(name, "=", value);
  std::vector<StartedProcess> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid) || pid == getpid()) continue;
    absl::StatusOr<ProcStat> stat = ReadProcStat(pid);
    if (!stat.ok() || stat->session != pid || stat->state == 'Z') continue;
    std::ifstream in(absl::StrCat("/proc/", pid, "/environ"), std::ios::binary);
    std::string variable;
    bool marked = false;
    while (!marked && std::getline(in, variable, '\0')) marked = variable == wanted;
    if (marked) found.push_back({pid, stat->start_ticks});
  }
  return found;
}

std::string LogTail(const std::string& path, int max_lines) {
  constexpr std::streamoff kMaxBytes = 64 << 10;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  std::streamoff size = in.tellg();
  std::streamoff start = size > kMaxBytes ? size - kMaxBytes : 0;
  in.seekg(start);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  // A partial first line (cut at kMaxBytes) is dropped; so is the empty
  // "line" after a final newline.
  if (start > 0 && !lines.empty()) lines.erase(lines.begin());
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  size_t first = lines.size() > static_cast<size_t>(max_lines) ? lines.size() - max_lines : 0;
  return absl::StrJoin(lines.begin() + first, lines.end(), "\n");
}

}  // namespace servelab::placement
