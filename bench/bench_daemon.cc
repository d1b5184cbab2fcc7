#include "bench/bench_daemon.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

extern char** environ;

namespace servelab::bench {
namespace {

constexpr absl::Duration kDaemonStartTimeout = absl::Seconds(30);
constexpr absl::Duration kExperimentTimeout = absl::Minutes(10);
constexpr absl::Duration kStopTimeout = absl::Seconds(15);

}  // namespace

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

bool IsFinal(v1::ExperimentState s) {
  return s == v1::EXPERIMENT_STATE_SUCCEEDED || s == v1::EXPERIMENT_STATE_FAILED ||
         s == v1::EXPERIMENT_STATE_CANCELLED;
}

bool WaitUntil(const std::function<bool()>& done, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q * v.size()));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / v.size();
}

Daemon::Daemon(const std::string& bin_dir, const std::string& work_dir, double time_scale,
               std::vector<std::string> extra_args)
    : state_dir_(work_dir + "/state"), log_path_(work_dir + "/servelabd.log") {
  std::vector<std::string> args = {bin_dir + "/servelabd",
                                   "--state-dir",
                                   state_dir_,
                                   "--sim-binary",
                                   bin_dir + "/servelab-sim",
                                   "--sim-time-scale",
                                   absl::StrCat(time_scale),
                                   "--log-level",
                                   "warn"};
  for (std::string& a : extra_args) args.push_back(std::move(a));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&actions);
}

std::string Daemon::WaitForAddress() {
  const std::string addr_file = state_dir_ + "/servelabd.addr";
  if (pid_ <= 0) return "";
  // A restarted daemon rewrites the file once its recovery is done.
  const auto old = std::filesystem::exists(addr_file) ? std::filesystem::last_write_time(addr_file)
                                                      : std::filesystem::file_time_type::min();
  auto written = [&] {
    return std::filesystem::exists(addr_file) && std::filesystem::last_write_time(addr_file) > old;
  };
  if (!WaitUntil([&] { return written() || !Running(); }, kDaemonStartTimeout) || !Running()) {
    std::fprintf(stderr, "servelabd did not come up; log:\n%s\n", ReadFile(log_path_).c_str());
    return "";
  }
  std::string addr = ReadFile(addr_file);
  absl::StripTrailingAsciiWhitespace(&addr);
  if (absl::StartsWith(addr, "tcp:")) addr = addr.substr(4);
  return addr;
}

bool Daemon::Running() {
  if (pid_ <= 0) return false;
  int status;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    exit_status_ = status;
    pid_ = -1;
    return false;
  }
  return true;
}

void Daemon::Stop() {
  if (!Running()) return;
  kill(pid_, SIGTERM);
  if (!WaitUntil([&] { return !Running(); }, kStopTimeout)) {
    std::fprintf(stderr, "servelabd did not stop in %s; SIGKILL\n",
                 absl::FormatDuration(kStopTimeout).c_str());
    kill(pid_, SIGKILL);
    waitpid(pid_, &exit_status_, 0);
    pid_ = -1;
  }
}

std::string Daemon::ExitText() {
  if (Running()) return "running";
  if (WIFEXITED(exit_status_)) return absl::StrCat("exited ", WEXITSTATUS(exit_status_));
  if (WIFSIGNALED(exit_status_)) return absl::StrCat("killed by signal ", WTERMSIG(exit_status_));
  return "not started";
}

std::unique_ptr<v1::ServeLab::Stub> Connect(const std::string& target) {
  return v1::ServeLab::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
}

bool WaitFinal(v1::ServeLab::Stub& stub, const std::string& id, v1::Experiment* out) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + kExperimentTimeout));
  v1::WatchExperimentRequest req;
  req.set_id(id);
  auto reader = stub.WatchExperiment(&ctx, req);
  v1::Experiment e;
  bool final = false;
  while (reader->Read(&e)) {
    if (IsFinal(e.state())) {
      final = true;
      ctx.TryCancel();
      break;
    }
  }
  reader->Finish();
  grpc::ClientContext get_ctx;
  v1::GetExperimentRequest get;
  get.set_id(id);
  grpc::Status s = stub.GetExperiment(&get_ctx, get, out);
  if (!s.ok()) {
    // The last streamed state still names the instances launched so far.
    *out = e;
    std::fprintf(stderr, "GetExperiment %s: %s\n", id.c_str(), s.error_message().c_str());
    return false;
  }
  return final || IsFinal(out->state());
}

void CollectInstancePids(const v1::Experiment& e, std::set<pid_t>* pids) {
  for (const v1::Stage& s : e.stages()) {
    if (s.name() != v1::STAGE_LAUNCH_PREFILL && s.name() != v1::STAGE_LAUNCH_DECODE &&
        s.name() != v1::STAGE_LAUNCH_ROUTER) {
      continue;
    }
    auto it = s.counters().find("pid");
    if (it != s.counters().end() && it->second > 0) pids->insert(static_cast<pid_t>(it->second));
  }
}

void KillInstances(const std::set<pid_t>& pids) {
  std::vector<pid_t> signalled;
  for (pid_t pid : pids) {
    std::string cmdline = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
    if (!absl::StrContains(cmdline, "servelab-sim")) continue;
    if (kill(pid, SIGTERM) == 0) signalled.push_back(pid);
  }
  for (pid_t pid : signalled) {
    std::string cmdline_path = absl::StrCat("/proc/", pid, "/cmdline");
    if (!WaitUntil([&] { return ReadFile(cmdline_path).empty(); }, absl::Seconds(5))) {
      kill(pid, SIGKILL);
    }
  }
}

}  // namespace servelab::bench
