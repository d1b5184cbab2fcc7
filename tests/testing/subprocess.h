// Runs the project's real binaries from tests: to completion with captured
// output (Run), or in the background until stopped (Process).
//
//   RunResult r = Run({BinPath("servelab"), "--addr", addr, "list"});
//   EXPECT_EQ(r.exit_code, 0) << r.err;
//
//   Process daemon({BinPath("servelabd"), "--state-dir", dir.path()});
//   ASSERT_TRUE(WaitFor([&] { return FileExists(sock); }, absl::Seconds(10)));
//   daemon.Signal(SIGTERM); EXPECT_EQ(daemon.Wait(), 0);
#ifndef SERVELAB_TESTS_TESTING_SUBPROCESS_H_
#define SERVELAB_TESTS_TESTING_SUBPROCESS_H_

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace servelab::testing {

// Path of a binary built by this project (build/bin/NAME).
std::string BinPath(const std::string& name);
// Path of a file in the source tree.
std::string SourcePath(const std::string& relative);

struct RunResult {
  int exit_code = -1;  // 128 + signal when killed by a signal.
  std::string out;
  std::string err;
};

// Runs argv (no shell) with `env_overrides` ("K=V") added to the environment,
// waits at most `timeout` (then kills it and returns exit_code -1).
RunResult Run(const std::vector<std::string>& argv,
              const std::vector<std::string>& env_overrides = {},
              absl::Duration timeout = absl::Seconds(60));

// `argv` as run without the privilege to ask for real-time scheduling: no
// RLIMIT_RTPRIO (prlimit) and, for a root test, no CAP_SYS_NICE (setpriv).
// Both are util-linux, in every Debian.
std::vector<std::string> WithoutRealtimePrivilege(std::vector<std::string> argv);

// A background process; stdout and stderr go to files `log_prefix`.out/.err
// when given, else are discarded. The destructor kills it if still running.
class Process {
 public:
  explicit Process(const std::vector<std::string>& argv, const std::string& log_prefix = "",
                   const std::vector<std::string>& env_overrides = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool Running();
  void Signal(int signo);
  // Exit code (128 + signal when killed); -1 if still running after timeout.
  int Wait(absl::Duration timeout = absl::Seconds(30));

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
  bool reaped_ = false;
};

// Polls `condition` every few milliseconds until it holds or `timeout` passes.
bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout);

bool FileExists(const std::string& path);
std::string ReadFile(const std::string& path);

// The state letter of /proc/<pid>/stat ('R', 'S', 'T', 'Z', ...), or 0 when
// the process is gone. `tid` names one thread of `pid`; 0 means the process.
char ProcessState(int pid, int tid = 0);

// SIGSTOPs `pid` and returns once every thread of it is stopped. kill()
// returns when the signal is pending, not when it has been acted on: a
// thread busy on the other core can still read a socket for a while.
bool StopProcess(int pid, absl::Duration timeout = absl::Seconds(10));
void WriteFile(const std::string& path, const std::string& content);

}  // namespace servelab::testing

#endif  // SERVELAB_TESTS_TESTING_SUBPROCESS_H_
