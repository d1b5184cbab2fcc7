// Running short-lived command-line tools (the Slurm clients: salloc,
// squeue, scontrol, scancel) to completion with their output captured, and
// finding them on a PATH. No shell: argv[0] is executed directly.
//
//   absl::StatusOr<std::string> squeue = FindInPath("squeue", getenv("PATH"));
//   absl::StatusOr<CommandResult> r =
//       RunCommand({*squeue, "-h", "-j", "42"}, {{"SLURM_CONF", conf}}, absl::Seconds(30));
//   if (r.ok() && r->exit_code == 0) Parse(r->out);
//
// Thread-safe.
#ifndef SERVELAB_DAEMON_PLACEMENT_COMMAND_RUNNER_H_
#define SERVELAB_DAEMON_PLACEMENT_COMMAND_RUNNER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace servelab::placement {

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed by one.
  std::string out;
  std::string err;
};

// Runs argv with stdin on /dev/null and the environment
// placement::kInheritedEnv (the daemon's values) plus `env`, which wins.
// A non-zero exit is a result, not an error. INVALID_ARGUMENT: empty argv or
// relative argv[0]; FAILED_PRECONDITION: it cannot be executed;
// DEADLINE_EXCEEDED: still running after `timeout` (it is then killed).
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const std::map<std::string, std::string>& env,
                                         absl::Duration timeout);

// The first executable file `name` in the ':'-separated `search_path`.
// NOT_FOUND naming the path searched.
absl::StatusOr<std::string> FindInPath(const std::string& name, const std::string& search_path);

}  // namespace servelab::placement

#endif  // SERVELAB_DAEMON_PLACEMENT_COMMAND_RUNNER_H_
