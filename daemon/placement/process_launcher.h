// Starting, watching and stopping serving processes on this machine.
//
// A serving instance must outlive the daemon that started it (docs/design.md §8
// "Daemon restart"), so every process starts in its own session and process
// group (its pid is the group id), with stdin on /dev/null and stdout+stderr
// appended to a log file. A process is identified by its pid *and* its start
// time (/proc/PID/stat field 22), so a recycled pid is never mistaken for
// the instance; Alive and Stop work on processes that are not our children
// (instances re-adopted after a restart).
//
//   absl::StatusOr<StartedProcess> p =
//       StartProcess({"/usr/bin/servelab-sim", "--port", "8100"}, {}, "/state/logs/p.log");
//   if (Alive(p->pid, p->start_ticks)) ...
//   absl::Status s = Stop(p->pid, p->start_ticks, absl::Seconds(10));
//
// No shell is involved: argv[0] must be an absolute path and is executed
// directly. The child's environment is the daemon's values of a few
// variables a process needs to function (kInheritedEnv) plus `env`, which
// wins. All functions are thread-safe.
#ifndef SERVELAB_DAEMON_PLACEMENT_PROCESS_LAUNCHER_H_
#define SERVELAB_DAEMON_PLACEMENT_PROCESS_LAUNCHER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace servelab::placement {

// Variables copied from the daemon's environment when it has them.
inline constexpr const char* kInheritedEnv[] = {"PATH", "HOME",   "USER", "LOGNAME",
                                                "LANG", "LC_ALL", "TZ",   "TMPDIR"};

struct StartedProcess {
  pid_t pid = 0;
  int64_t start_ticks = 0;  // Clock ticks since boot.
};

// Starts `argv` in a new session. Creates the log file's directory if needed.
// INVALID_ARGUMENT: empty argv or relative argv[0]. FAILED_PRECONDITION: the
// binary cannot be executed or the log file cannot be opened (the message
// names the path and the OS error).
absl::StatusOr<StartedProcess> StartProcess(const std::vector<std::string>& argv,
                                            const std::map<std::string, std::string>& env,
                                            const std::string& log_path);

// The start time of `pid` from /proc; NOT_FOUND when there is no such process.
absl::StatusOr<int64_t> ProcessStartTicks(pid_t pid);

// The process `pid` that started at `start_ticks` exists and is not a
// zombie. If it is a zombie child of ours it is reaped here.
bool Alive(pid_t pid, int64_t start_ticks);

// SIGTERM to the process group, SIGKILL to the group if the leader or any
// member is still there after `grace`; reaps the leader if it is our child.
// OK when the process is already gone. DEADLINE_EXCEEDED if it survives
// SIGKILL for several seconds (uninterruptible sleep).
absl::Status Stop(pid_t pid, int64_t start_ticks, absl::Duration grace);

// Session leaders (processes StartProcess started) whose environment holds
// NAME=VALUE: how a restarted daemon finds an instance it started but never
// recorded. Processes it may not read (another user's) never match.
std::vector<StartedProcess> FindSessionLeadersWithEnv(const std::string& name,
                                                      const std::string& value);

// The last `max_lines` lines of a file (at most the last 64 KiB), for error
// messages about a process that died; empty if the file cannot be read.
std::string LogTail(const std::string& path, int max_lines);

}  // namespace servelab::placement

#endif  // SERVELAB_DAEMON_PLACEMENT_PROCESS_LAUNCHER_H_
