#include "tests/slurm/slurm_fixture.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/testing/ports.h"

namespace servelab::testing {
namespace {

constexpr int kSkipExit = 77;  // slurm_cluster.sh: this machine cannot run it.

std::string Script() { return SourcePath("tests/slurm/slurm_cluster.sh"); }

std::string Trimmed(const std::string& text) {
  return std::string(absl::StripAsciiWhitespace(text));
}

std::string ResolveBinary(const std::string& name) {
  if (absl::StrContains(name, '/')) return name;
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':')) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return name;  // Run then reports that it cannot execute it.
}

// /proc/PID/cmdline or environ: NUL-separated strings.
std::vector<std::string> ProcStrings(const std::string& pid, const char* file) {
  std::string content = ReadFile(absl::StrCat("/proc/", pid, "/", file));
  return absl::StrSplit(content, '\0', absl::SkipEmpty());
}

}  // namespace

absl::StatusOr<std::unique_ptr<SlurmCluster>> SlurmCluster::Start() {
  std::unique_ptr<SlurmCluster> cluster(new SlurmCluster());
  int ctld_port = ClosedLoopbackPort();
  int slurmd_port = ClosedLoopbackPort();
  while (slurmd_port == ctld_port) slurmd_port = ClosedLoopbackPort();
  RunResult r =
      Run({"/bin/bash", Script(), "start", cluster->dir()},
          {absl::StrCat("SLURMCTLD_PORT=", ctld_port), absl::StrCat("SLURMD_PORT=", slurmd_port)},
          absl::Seconds(120));
  if (r.exit_code == kSkipExit) return absl::FailedPreconditionError(Trimmed(r.err));
  if (r.exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("slurm_cluster.sh start exited ", r.exit_code, ":\n", r.err, r.out));
  }
  cluster->conf_ = cluster->dir() + "/slurm.conf";
  cluster->running_ = true;
  return cluster;
}

SlurmCluster::~SlurmCluster() { Stop().IgnoreError(); }

std::unique_ptr<SlurmCluster> StartClusterOrSkip() {
  absl::StatusOr<std::unique_ptr<SlurmCluster>> cluster = SlurmCluster::Start();
  if (absl::IsFailedPrecondition(cluster.status())) {
    [&] { GTEST_SKIP() << "no Slurm test cluster here: " << cluster.status().message(); }();
    return nullptr;
  }
  // Fatal, so that the test body does not run without its cluster.
  if (!cluster.ok()) [&] { FAIL() << cluster.status(); }();
  return cluster.ok() ? std::move(*cluster) : nullptr;
}

absl::Status SlurmCluster::RunScript(const std::string& command) const {
  RunResult r = Run({"/bin/bash", Script(), command, dir()}, {}, absl::Seconds(120));
  if (r.exit_code == 0) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("slurm_cluster.sh ", command, " exited ", r.exit_code, ":\n", r.err, r.out));
}

std::string SlurmCluster::LogTails() const {
  std::string tails;
  for (const char* name : {"slurmctld.log", "slurmd.log"}) {
    std::vector<std::string> lines =
        absl::StrSplit(ReadFile(absl::StrCat(dir(), "/log/", name)), '\n', absl::SkipEmpty());
    size_t from = lines.size() > 20 ? lines.size() - 20 : 0;
    absl::StrAppend(&tails, "--- tail of ", name, "\n");
    for (size_t i = from; i < lines.size(); ++i) absl::StrAppend(&tails, lines[i], "\n");
  }
  return tails;
}

absl::Status SlurmCluster::Stop() {
  if (!running_) return absl::OkStatus();
  running_ = false;
  return RunScript("stop");
}

absl::Status SlurmCluster::StopController() { return RunScript("stop-controller"); }

absl::Status SlurmCluster::StartController() { return RunScript("start-controller"); }

RunResult SlurmCluster::Client(std::vector<std::string> argv) const {
  if (!argv.empty()) argv[0] = ResolveBinary(argv[0]);
  return Run(argv, {absl::StrCat("SLURM_CONF=", conf_)}, absl::Seconds(60));
}

std::vector<pid_t> SlurmCluster::Processes() const {
  const std::string conf_entry = absl::StrCat("SLURM_CONF=", dir(), "/slurm.conf");
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    pid_t pid = 0;
    if (!absl::SimpleAtoi(name, &pid) || pid == getpid() || ProcessState(pid) == 'Z') continue;
    bool ours = false;
    for (const std::string& arg : ProcStrings(name, "cmdline")) {
      ours |= absl::StrContains(arg, dir());
    }
    for (const std::string& var : ProcStrings(name, "environ")) ours |= var == conf_entry;
    if (ours) pids.push_back(pid);
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

}  // namespace servelab::testing
