// controller_bench: what the daemon's controller costs around a formal load, on a
// hot deployment (issue 5, "Performance"). A program that prints figures, not
// a test.
//
//   build/bin/controller_bench [--spec deploy/examples/pd-quick.yaml] [--deltas 20]
//       [--time-scale 0.05]
//
// Starts the real servelabd (beside this binary) on a fresh temp state dir,
// submits --spec and waits for it to finish so that the deployment is hot,
// then submits --deltas pure concurrency deltas of it, one at a time. Figures:
//   - submit -> first formal request: progress.first_formal_request_at minus
//     the bench's wall clock right after SubmitExperiment returned (target
//     <= 20 ms median);
//   - controller time beyond the formal window, per stage (ended - started of
//     every stage except formal_load), and unattributed time: the part of
//     [submitted_at, last stage ended] that no stage interval covers
//     (target 0), with where those gaps sit.
// Stops the daemon with SIGTERM, then the serving processes it launched
// (pids from the launch_* stage counters), and removes the temp dir.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_common.h"
#include "common/labels.h"
#include "servelab/v1/service.grpc.pb.h"

extern char** environ;

namespace servelab::bench {
namespace {

namespace fs = std::filesystem;

constexpr absl::Duration kDaemonStartTimeout = absl::Seconds(30);
constexpr absl::Duration kExperimentTimeout = absl::Minutes(10);
constexpr absl::Duration kStopTimeout = absl::Seconds(15);
constexpr double kTargetFirstFormalMedianMs = 20;

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

std::string StageLabel(v1::StageName name) {
  return absl::AsciiStrToLower(absl::StripPrefix(v1::StageName_Name(name), "STAGE_"));
}

bool IsFinal(v1::ExperimentState s) {
  return s == v1::EXPERIMENT_STATE_SUCCEEDED || s == v1::EXPERIMENT_STATE_FAILED ||
         s == v1::EXPERIMENT_STATE_CANCELLED;
}

// Nearest rank on a sorted copy.
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

bool WaitUntil(const std::function<bool()>& done, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

// The figures of one finished experiment.
struct Timing {
  std::string id;
  v1::ExperimentState state = v1::EXPERIMENT_STATE_UNSPECIFIED;
  double submit_to_first_formal_ms = NAN;  // from the bench's clock after Submit returned
  double first_formal_delay_ms = NAN;      // the daemon's own, from submitted_at
  double total_ms = 0;                     // last stage ended - submitted_at
  double formal_window_ms = 0;             // formal_load ended - started
  double whole_duration_ms = 0;            // result.whole.duration_seconds
  double span_sum_ms = 0;                  // sum of every stage's ended - started
  double unattributed_ms = 0;              // total minus the union of stage intervals
  std::map<v1::StageName, double> stage_ms;
  std::map<v1::StageName, std::string> stage_action;
  // Uncovered time, keyed by the stage whose start ends the gap.
  std::map<std::string, double> gap_before_ms;
};

Timing Measure(const v1::Experiment& e, absl::Time submit_returned) {
  Timing t;
  t.id = e.id();
  t.state = e.state();
  const absl::Time submitted = FromProto(e.submitted_at());
  if (e.progress().has_first_formal_request_at()) {
    t.submit_to_first_formal_ms =
        Ms(FromProto(e.progress().first_formal_request_at()) - submit_returned);
    t.first_formal_delay_ms = Ms(FromProto(e.progress().first_formal_request_at()) - submitted);
  }
  t.whole_duration_ms = e.result().whole().duration_seconds() * 1e3;

  struct Span {
    absl::Time start, end;
    v1::StageName name;
  };
  std::vector<Span> spans;
  absl::Time last_end = submitted;
  for (const v1::Stage& s : e.stages()) {
    t.stage_action[s.name()] =
        absl::AsciiStrToLower(absl::StripPrefix(v1::StageAction_Name(s.action()), "STAGE_ACTION_"));
    if (!s.has_started_at() || !s.has_ended_at()) {
      t.stage_ms[s.name()] += 0;
      continue;
    }
    Span span{FromProto(s.started_at()), FromProto(s.ended_at()), s.name()};
    double ms = Ms(span.end - span.start);
    t.stage_ms[s.name()] += ms;
    t.span_sum_ms += ms;
    if (s.name() == v1::STAGE_FORMAL_LOAD) t.formal_window_ms += ms;
    last_end = std::max(last_end, span.end);
    spans.push_back(span);
  }
  t.total_ms = Ms(last_end - submitted);

  // Walk the intervals in start order; whatever lies between the furthest end
  // so far and the next start is time no stage accounts for.
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.start < b.start; });
  absl::Time covered_to = submitted;
  double covered_ms = 0;
  for (const Span& s : spans) {
    absl::Time start = std::max(s.start, covered_to);
    if (s.start > covered_to) t.gap_before_ms[StageLabel(s.name)] += Ms(s.start - covered_to);
    if (s.end > start) {
      covered_ms += Ms(s.end - start);
      covered_to = s.end;
    }
  }
  t.unattributed_ms = t.total_ms - covered_ms;
  return t;
}

// servelabd as a child process, with its output in files of the temp dir.
class Daemon {
 public:
  Daemon(const std::string& bin_dir, const std::string& work_dir, double time_scale)
      : state_dir_(work_dir + "/state") {
    std::vector<std::string> args = {bin_dir + "/servelabd",
                                     "--state-dir",
                                     state_dir_,
                                     "--sim-binary",
                                     bin_dir + "/servelab-sim",
                                     "--sim-time-scale",
                                     absl::StrCat(time_scale),
                                     "--log-level",
                                     "warn"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    log_path_ = work_dir + "/servelabd.log";
    posix_spawn_file_actions_addopen(&actions, 1, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }

  ~Daemon() { Stop(); }

  // The gRPC target, once the daemon wrote its address; empty if it died or timed out.
  std::string WaitForAddress() {
    const std::string addr_file = state_dir_ + "/servelabd.addr";
    if (pid_ <= 0) return "";
    if (!WaitUntil([&] { return fs::exists(addr_file) || !Running(); }, kDaemonStartTimeout) ||
        !Running()) {
      return "";
    }
    std::string addr = ReadFile(addr_file);
    absl::StripTrailingAsciiWhitespace(&addr);
    if (absl::StartsWith(addr, "tcp:")) addr = addr.substr(4);
    return addr;
  }

  bool Running() {
    if (pid_ <= 0) return false;
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_status_ = status;
      pid_ = -1;
      return false;
    }
    return true;
  }

  // SIGTERM, then SIGKILL if it has not exited within kStopTimeout.
  void Stop() {
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

  const std::string& log_path() const { return log_path_; }

  // How it ended, for error messages.
  std::string ExitText() {
    if (Running()) return "running";
    if (WIFEXITED(exit_status_)) return absl::StrCat("exited ", WEXITSTATUS(exit_status_));
    if (WIFSIGNALED(exit_status_)) return absl::StrCat("killed by signal ", WTERMSIG(exit_status_));
    return "not started";
  }

 private:
  std::string state_dir_;
  std::string log_path_;
  pid_t pid_ = -1;
  int exit_status_ = -1;
};

// Waits on WatchExperiment until the experiment is final, then re-reads it.
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

// Pids of the serving processes recorded in the launch stages.
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

// Only processes that still are servelab-sim: a pid may have been reused.
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

int Run(const std::string& spec_path, int deltas, double time_scale) {
  const std::string bin_dir = fs::read_symlink("/proc/self/exe").parent_path().string();
  char tmpl[] = "/tmp/controller_bench.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string work_dir = tmpl;
  std::string spec_text = ReadFile(spec_path);
  if (spec_text.empty()) {
    std::fprintf(stderr, "cannot read spec %s\n", spec_path.c_str());
    return 1;
  }

  std::vector<Timing> timings;
  std::set<pid_t> instance_pids;
  int rc = 0;
  {
    Daemon daemon(bin_dir, work_dir, time_scale);
    std::string target = daemon.WaitForAddress();
    if (target.empty()) {
      std::fprintf(stderr, "servelabd did not come up; log:\n%s\n",
                   ReadFile(daemon.log_path()).c_str());
      fs::remove_all(work_dir);
      return 1;
    }
    auto stub =
        v1::ServeLab::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));

    auto submit = [&](const v1::SubmitExperimentRequest& req, v1::SubmitExperimentResponse* resp,
                      absl::Time* returned) {
      grpc::ClientContext ctx;
      grpc::Status s = stub->SubmitExperiment(&ctx, req, resp);
      *returned = absl::Now();
      if (!s.ok()) std::fprintf(stderr, "SubmitExperiment: %s\n", s.error_message().c_str());
      return s.ok();
    };

    // The base: launches and warms the deployment.
    v1::SubmitExperimentRequest base_req;
    base_req.set_spec_text(spec_text);
    base_req.set_spec_name(spec_path);
    base_req.set_base_dir(fs::path(spec_path).parent_path().string());
    v1::SubmitExperimentResponse base_resp;
    absl::Time returned;
    v1::Experiment base;
    absl::Time base_start = absl::Now();
    if (!submit(base_req, &base_resp, &returned) ||
        !WaitFinal(*stub, base_resp.experiment().id(), &base)) {
      CollectInstancePids(base, &instance_pids);
      rc = 1;
    } else {
      CollectInstancePids(base, &instance_pids);
      std::printf("base %s: %s in %.0f ms (cold: launch + warmup)\n", base.id().c_str(),
                  v1::ExperimentState_Name(base.state()).c_str(), Ms(absl::Now() - base_start));
      if (base.state() != v1::EXPERIMENT_STATE_SUCCEEDED) rc = 1;
    }

    const int kConcurrency[] = {8, 12, 16};
    for (int i = 0; rc == 0 && i < deltas; ++i) {
      v1::SubmitExperimentRequest req;
      req.set_base_id(base.id());
      req.add_set(absl::StrCat("workload.concurrency=", kConcurrency[i % 3]));
      v1::SubmitExperimentResponse resp;
      v1::Experiment done;
      if (!submit(req, &resp, &returned) || !WaitFinal(*stub, resp.experiment().id(), &done)) {
        CollectInstancePids(done, &instance_pids);
        rc = 1;
        break;
      }
      CollectInstancePids(done, &instance_pids);
      timings.push_back(Measure(done, returned));
      if (done.state() != v1::EXPERIMENT_STATE_SUCCEEDED) {
        std::fprintf(stderr, "delta %s ended %s\n", done.id().c_str(),
                     v1::ExperimentState_Name(done.state()).c_str());
      }
    }
    if (rc != 0) {
      std::fprintf(stderr, "servelabd %s; log:\n%s\n", daemon.ExitText().c_str(),
                   ReadFile(daemon.log_path()).c_str());
    }
    daemon.Stop();
  }
  KillInstances(instance_pids);
  fs::remove_all(work_dir);
  if (timings.empty()) return 1;

  std::vector<double> first_formal, first_delay, total, formal, whole, beyond, unattributed,
      span_gap;
  std::map<v1::StageName, std::vector<double>> per_stage;
  std::map<v1::StageName, std::set<std::string>> actions;
  std::map<std::string, double> gaps;
  int succeeded = 0;
  for (const Timing& t : timings) {
    if (t.state == v1::EXPERIMENT_STATE_SUCCEEDED) ++succeeded;
    if (!std::isnan(t.submit_to_first_formal_ms)) {
      first_formal.push_back(t.submit_to_first_formal_ms);
      first_delay.push_back(t.first_formal_delay_ms);
    }
    total.push_back(t.total_ms);
    formal.push_back(t.formal_window_ms);
    whole.push_back(t.whole_duration_ms);
    beyond.push_back(t.total_ms - t.formal_window_ms);
    unattributed.push_back(t.unattributed_ms);
    span_gap.push_back(t.total_ms - t.span_sum_ms);
    for (const auto& [name, ms] : t.stage_ms) per_stage[name].push_back(ms);
    for (const auto& [name, action] : t.stage_action) actions[name].insert(action);
    for (const auto& [where, ms] : t.gap_before_ms) gaps[where] += ms / timings.size();
  }

  const double median = Percentile(first_formal, 0.5);
  std::printf("\nmachine: %s\n", Machine().c_str());
  std::printf(
      "spec: %s, sim time scale %g, %zu concurrency deltas (8/12/16) on a hot "
      "deployment, %d succeeded\n\n",
      spec_path.c_str(), time_scale, timings.size(), succeeded);
  std::printf("submit returned -> first formal request (ms, %zu samples)\n", first_formal.size());
  std::printf("  median %.2f  p90 %.2f  max %.2f   target <= %.0f median: %s\n", median,
              Percentile(first_formal, 0.9), Percentile(first_formal, 1.0),
              kTargetFirstFormalMedianMs, median <= kTargetFirstFormalMedianMs ? "MET" : "MISSED");
  std::printf(
      "  (daemon's first_formal_request_delay from submitted_at: median %.2f, max %.2f)\n\n",
      Percentile(first_delay, 0.5), Percentile(first_delay, 1.0));

  std::printf(
      "per experiment, mean ms: total (submitted -> last stage ended) %.1f, formal window "
      "%.1f (result.whole.duration %.1f), beyond the formal window %.1f\n\n",
      Mean(total), Mean(formal), Mean(whole), Mean(beyond));
  std::printf("time beyond the formal window, by stage (ms)\n");
  std::printf("  %-14s %-12s %9s %9s\n", "stage", "action", "mean", "max");
  double stage_sum = 0;
  for (const auto& [name, values] : per_stage) {
    if (name == v1::STAGE_FORMAL_LOAD) continue;
    std::string action;
    for (const std::string& a : actions[name])
      absl::StrAppend(&action, action.empty() ? "" : "/", a);
    stage_sum += Mean(values);
    std::printf("  %-14s %-12s %9.2f %9.2f\n", StageLabel(name).c_str(), action.c_str(),
                Mean(values), Percentile(values, 1.0));
  }
  std::printf("  %-14s %-12s %9.2f\n", "stages, sum", "", stage_sum);
  std::printf("  %-14s %-12s %9.2f %9.2f   target 0\n", "unattributed", "", Mean(unattributed),
              Percentile(unattributed, 1.0));
  std::printf("  (total - sum of stage spans: mean %.2f ms; negative means stages overlap)\n",
              Mean(span_gap));
  if (!gaps.empty()) {
    std::printf("  unattributed, by where the gap sits (mean ms):");
    for (const auto& [where, ms] : gaps) std::printf("  before %s %.2f", where.c_str(), ms);
    std::printf("\n");
  }
  return rc;
}

}  // namespace
}  // namespace servelab::bench

int main(int argc, char** argv) {
  std::string spec = std::string(SERVELAB_SOURCE_DIR) + "/deploy/examples/pd-quick.yaml";
  int deltas = 20;
  double time_scale = 0.05;
  CLI::App app{
      "controller_bench: submit -> first formal request and controller time beyond the "
      "formal window, on a hot deployment (issue 5)"};
  app.add_option("--spec", spec, "Base spec file")->capture_default_str();
  app.add_option("--deltas", deltas, "Concurrency deltas to run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--time-scale", time_scale, "servelabd --sim-time-scale")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);
  return servelab::bench::Run(std::filesystem::absolute(spec).string(), deltas, time_scale);
}
