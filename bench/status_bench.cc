// status_bench: how fast `servelab status` answers while the daemon itself
// drives a large formal load (issue 9, P7). A program that prints figures,
// not a test.
//
//   build/bin/status_bench [--streams 2000] [--requests 4000]
//       [--output-tokens 50] [--time-scale 1] [--interval-ms 5]
//
// Starts the real servelabd on servelab-sim, submits deploy/examples/
// pd-quick.yaml with --streams concurrent requests of short prompts, and
// calls GetExperiment every --interval-ms from the start until the
// experiment is final. The figure is the latency of the calls made while
// formal_load was running, whose answer says so (target p99 <= 5 ms).
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/bench_common.h"
#include "bench/bench_daemon.h"

namespace servelab::bench {
namespace {

namespace fs = std::filesystem;

constexpr double kTargetP99Ms = 5;

struct Options {
  std::string spec;
  int streams = 2000;
  int requests = 4000;
  int output_tokens = 50;
  double time_scale = 1;
  int interval_ms = 5;
};

bool FormalLoadRunning(const v1::Experiment& e) {
  for (const v1::Stage& s : e.stages()) {
    if (s.name() == v1::STAGE_FORMAL_LOAD) return s.status() == v1::STAGE_STATUS_RUNNING;
  }
  return false;
}

v1::SubmitExperimentRequest LoadRequest(const Options& o) {
  v1::SubmitExperimentRequest req;
  req.set_spec_text(ReadFile(o.spec));
  req.set_spec_name(o.spec);
  req.set_base_dir(fs::path(o.spec).parent_path().string());
  for (const std::string& set : {
           absl::StrCat("workload.concurrency=", o.streams),
           absl::StrCat("workload.num_requests=", o.requests),
           std::string("workload.dataset.input_tokens=256"),
           std::string("workload.dataset.prefix_cache_ratio=0"),
           absl::StrCat("workload.dataset.output_tokens=", o.output_tokens),
           absl::StrCat("deployment.prefill.max_num_seqs=", o.streams),
           absl::StrCat("deployment.decode.max_num_seqs=", o.streams),
       }) {
    req.add_set(set);
  }
  return req;
}

int Run(const Options& o) {
  const std::string bin_dir = fs::read_symlink("/proc/self/exe").parent_path().string();
  const std::string work_dir = MakeWorkDir("status_bench");
  if (work_dir.empty()) return 1;
  std::set<pid_t> instance_pids;
  std::vector<double> during, other;
  v1::Experiment last;
  int rc = 0;
  {
    Daemon daemon(bin_dir, work_dir, o.time_scale);
    std::string target = daemon.WaitForAddress();
    if (target.empty()) {
      fs::remove_all(work_dir);
      return 1;
    }
    auto stub = Connect(target);
    grpc::ClientContext submit_ctx;
    v1::SubmitExperimentResponse submitted;
    grpc::Status s = stub->SubmitExperiment(&submit_ctx, LoadRequest(o), &submitted);
    if (!s.ok()) {
      std::fprintf(stderr, "SubmitExperiment: %s\n", s.error_message().c_str());
      rc = 1;
    }
    const absl::Time deadline = absl::Now() + absl::Minutes(15);
    while (rc == 0 && !IsFinal(last.state()) && absl::Now() < deadline) {
      grpc::ClientContext ctx;
      v1::GetExperimentRequest get;
      get.set_id(submitted.experiment().id());
      const absl::Time start = absl::Now();
      s = stub->GetExperiment(&ctx, get, &last);
      const double ms = Ms(absl::Now() - start);
      if (!s.ok()) {
        std::fprintf(stderr, "GetExperiment: %s\n", s.error_message().c_str());
        rc = 1;
        break;
      }
      (FormalLoadRunning(last) ? during : other).push_back(ms);
      absl::SleepFor(absl::Milliseconds(o.interval_ms));
    }
    CollectInstancePids(last, &instance_pids);
    if (last.state() != v1::EXPERIMENT_STATE_SUCCEEDED) {
      std::fprintf(stderr, "experiment ended %s; log:\n%s\n",
                   v1::ExperimentState_Name(last.state()).c_str(),
                   ReadFile(daemon.log_path()).c_str());
      rc = 1;
    }
    daemon.Stop();
  }
  KillInstances(instance_pids);
  fs::remove_all(work_dir);
  if (during.empty()) {
    std::fprintf(stderr, "no status call landed during the formal load\n");
    return 1;
  }
  const double p99 = Percentile(during, 0.99);
  std::printf("machine: %s\n", Machine().c_str());
  std::printf(
      "formal load: %d requests, %d streams, %d output tokens each, sim time scale %g; "
      "%lld sent, %.1f s formal window\n",
      o.requests, o.streams, o.output_tokens, o.time_scale,
      static_cast<long long>(last.progress().formal_requests_sent()),
      last.result().whole().duration_seconds());
  std::printf(
      "status (GetExperiment) during the formal load, ms (%zu calls): p50 %.3f  p99 %.3f  "
      "max %.3f   target p99 <= %.0f: %s\n",
      during.size(), Percentile(during, 0.5), p99, Percentile(during, 1.0), kTargetP99Ms,
      p99 <= kTargetP99Ms ? "MET" : "MISSED");
  std::printf("status outside the formal load, ms (%zu calls): p50 %.3f  p99 %.3f\n", other.size(),
              Percentile(other, 0.5), Percentile(other, 0.99));
  return rc;
}

}  // namespace
}  // namespace servelab::bench

int main(int argc, char** argv) {
  servelab::bench::Options o;
  o.spec = std::string(SERVELAB_SOURCE_DIR) + "/deploy/examples/pd-quick.yaml";
  CLI::App app{"status_bench: status latency while the daemon drives a formal load (issue 9, P7)"};
  app.add_option("--spec", o.spec, "Base spec file")->capture_default_str();
  app.add_option("--streams", o.streams, "Concurrent formal requests")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--requests", o.requests, "Formal requests")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--output-tokens", o.output_tokens, "Output tokens per request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--time-scale", o.time_scale, "servelabd --sim-time-scale")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--interval-ms", o.interval_ms, "Pause between status calls")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);
  o.spec = std::filesystem::absolute(o.spec).string();
  return servelab::bench::Run(o);
}
