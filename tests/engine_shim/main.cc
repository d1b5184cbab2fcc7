// servelab-engine-shim: stands in for vllm / python (vLLM, vllm-ascend,
// SGLang, their proxies and router) in the daemon's integration tests. It
// checks the real argv the daemon rendered the way the real engine would
// (engine_shim.h), holds the engine's extra ports (bound_ports.h), then execs
// servelab-sim (next to this binary) with the translated flags.
//
// SERVELAB_SHIM_DRY_RUN=1 prints the servelab-sim argv, one per line, and
// exits 0 instead of exec (its --config is then a file under $TMPDIR that
// stays; the exec path passes an unlinked /dev/fd/N instead); SERVELAB_SHIM_DRY_RUN=hold prints it
// and then waits for SIGTERM/SIGINT, keeping the ports bound (tests of port clashes). Every
// rejection exits 2 with the reason on stderr.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "tests/engine_shim/bound_ports.h"
#include "tests/engine_shim/engine_shim.h"

extern char** environ;

namespace {

constexpr char kProgram[] = "servelab-engine-shim";

int Reject(const std::string& message) {
  std::cerr << kProgram << ": " << message << std::endl;
  return 2;
}

std::string SimBinary() {
  std::vector<char> buffer(4096);
  ssize_t n = readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  std::string self = n > 0 ? std::string(buffer.data(), n) : std::string();
  size_t slash = self.rfind('/');
  return (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) + "/servelab-sim";
}

// Writes the sim's --config under $TMPDIR (or /tmp) and returns the path to
// pass. Unless `keep` (the dry run, whose caller reads the file), the file is
// unlinked at once and handed over as /dev/fd/N on an inherited descriptor:
// the sim reads it at start-up and nothing is left behind.
bool WriteConfig(const std::string& yaml, bool keep, std::string* path) {
  const char* dir = getenv("TMPDIR");
  std::string pattern =
      std::string(dir != nullptr && *dir ? dir : "/tmp") + "/servelab-engine-shim-XXXXXX.yaml";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = mkstemps(name.data(), 5);
  if (fd < 0) return false;
  bool ok = write(fd, yaml.data(), yaml.size()) == static_cast<ssize_t>(yaml.size());
  if (keep) {
    ok &= close(fd) == 0;
    *path = name.data();
    return ok;
  }
  // mkstemps opens without O_CLOEXEC, so the descriptor survives execv.
  unlink(name.data());
  *path = "/dev/fd/" + std::to_string(fd);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace servelab::engine_shim;
  std::vector<std::string> args(argv + 1, argv + argc);
  Environment env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }

  absl::StatusOr<ShimPlan> plan = PlanShim(args, env);
  if (!plan.ok()) return Reject(std::string(plan.status().message()));
  if (absl::Status bound = BindAndListen(plan->bindings); !bound.ok()) {
    return Reject(std::string(bound.message()));
  }

  std::string dry_run = env.count("SERVELAB_SHIM_DRY_RUN") ? env["SERVELAB_SHIM_DRY_RUN"] : "";
  const bool is_dry_run = !dry_run.empty() && dry_run != "0";
  std::vector<std::string> sim_argv = {SimBinary()};
  sim_argv.insert(sim_argv.end(), plan->sim_args.begin(), plan->sim_args.end());
  if (!plan->capacity.empty()) {
    std::string config;
    if (!WriteConfig(CapacityYaml(plan->capacity), /*keep=*/is_dry_run, &config)) {
      return Reject(std::string("cannot write the servelab-sim config: ") + std::strerror(errno));
    }
    sim_argv.insert(sim_argv.end(), {"--config", config});
  }

  if (is_dry_run) {
    for (const std::string& arg : sim_argv) std::cout << arg << "\n";
    std::cout.flush();
    if (dry_run == "hold") {
      sigset_t signals;
      sigemptyset(&signals);
      sigaddset(&signals, SIGTERM);
      sigaddset(&signals, SIGINT);
      sigprocmask(SIG_BLOCK, &signals, nullptr);
      int received = 0;
      sigwait(&signals, &received);
    }
    return 0;
  }

  std::cerr << kProgram << ": " << plan->tool << " " << plan->version << " -> servelab-sim"
            << std::endl;
  std::vector<char*> c_argv;
  for (std::string& arg : sim_argv) c_argv.push_back(arg.data());
  c_argv.push_back(nullptr);
  execv(c_argv[0], c_argv.data());
  std::cerr << kProgram << ": cannot exec " << sim_argv[0] << ": " << std::strerror(errno)
            << std::endl;
  return 127;
}
