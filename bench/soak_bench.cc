// soak_bench: back-to-back experiments on one servelabd for a long time
// (issue 10, R6), to show that nothing grows per experiment but the store.
// A program that prints figures, not a test; CI does not run it.
//
//   build/bin/soak_bench [--minutes 30] [--sample-seconds 60] [--time-scale 0.05]
//
// Starts the real servelabd on servelab-sim, submits deploy/examples/
// pd-quick.yaml at a small size, then deltas against it one after another:
// mostly concurrency changes, every fifth a decode expert-layout change (so
// decode and the router relaunch), every seventh another cache ratio. Every
// --sample-seconds it prints one row: experiments done, servelabd's RSS,
// threads and open descriptors, the servelab-sim processes' RSS, the
// database and WAL sizes. At the end it compares the last sample with the
// first one after warm-up: RSS, threads, descriptors and WAL are to stay
// flat; the database grows with the history it keeps (printed per
// experiment).
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

struct Options {
  std::string spec;
  double minutes = 30;
  int sample_seconds = 60;
  double time_scale = 0.05;
};

struct Sample {
  double minutes = 0;
  int succeeded = 0;
  int failed = 0;
  int64_t rss_kib = 0;
  int64_t threads = 0;
  int64_t fds = 0;
  int64_t sims_rss_kib = 0;
  int64_t db_bytes = 0;
  int64_t wal_bytes = 0;
};

int64_t OpenDescriptors(pid_t pid) {
  int64_t n = 0;
  std::error_code error;
  for (fs::directory_iterator it(absl::StrCat("/proc/", pid, "/fd"), error), end;
       !error && it != end; it.increment(error)) {
    ++n;
  }
  return n;
}

int64_t FileBytes(const std::string& path) {
  std::error_code error;
  const uintmax_t size = fs::file_size(path, error);
  return error ? 0 : static_cast<int64_t>(size);
}

// The i-th submission after the base: a delta against it (relative layout
// paths resolve against the spec's directory, as the CLI's would).
v1::SubmitExperimentRequest Delta(const Options& o, const std::string& base_id, int i) {
  v1::SubmitExperimentRequest req;
  req.set_base_id(base_id);
  req.set_base_dir(fs::path(o.spec).parent_path().string());
  req.add_set(absl::StrCat("workload.concurrency=", 4 + i % 9));
  if (i % 5 == 0) {
    req.add_set(absl::StrCat("deployment.decode.expert_layout=layouts/decode-layout-",
                             (i / 5) % 2 == 0 ? "b" : "a", ".json"));
  }
  if (i % 7 == 0) req.add_set(absl::StrCat("workload.dataset.prefix_cache_ratio=0.", i % 10));
  return req;
}

v1::SubmitExperimentRequest Base(const Options& o) {
  v1::SubmitExperimentRequest req;
  req.set_spec_text(ReadFile(o.spec));
  req.set_spec_name(o.spec);
  req.set_base_dir(fs::path(o.spec).parent_path().string());
  for (const char* set : {"workload.num_requests=32", "workload.dataset.input_tokens=1024",
                          "workload.dataset.output_tokens=32"}) {
    req.add_set(set);
  }
  return req;
}

void PrintSample(const Sample& s) {
  std::printf("%7.1f %9d %6d %10.1f %7lld %5lld %12.1f %9.1f %9.1f\n", s.minutes, s.succeeded,
              s.failed, s.rss_kib / 1024.0, static_cast<long long>(s.threads),
              static_cast<long long>(s.fds), s.sims_rss_kib / 1024.0, s.db_bytes / 1048576.0,
              s.wal_bytes / 1048576.0);
  std::fflush(stdout);
}

// Last against first-after-warm-up; true when every per-process figure and
// the WAL stayed flat.
bool PrintVerdict(const std::vector<Sample>& samples) {
  if (samples.size() < 3) {
    std::printf("too few samples for a verdict (run longer than 3 samples)\n");
    return false;
  }
  const Sample& first = samples[1];  // samples[0] is the warm-up.
  const Sample& last = samples.back();
  auto flat = [](const char* what, double from, double to, double slack) {
    const bool ok = to <= from * 1.10 + slack;
    std::printf("  %-26s %10.1f -> %10.1f  %s\n", what, from, to, ok ? "flat" : "GREW");
    return ok;
  };
  std::printf("from minute %.1f to minute %.1f (%d experiments):\n", first.minutes, last.minutes,
              last.succeeded + last.failed - first.succeeded - first.failed);
  bool ok = flat("servelabd RSS, MiB", first.rss_kib / 1024.0, last.rss_kib / 1024.0, 8);
  ok &= flat("servelabd threads", first.threads, last.threads, 2);
  ok &= flat("servelabd descriptors", first.fds, last.fds, 2);
  ok &= flat("servelab-sim RSS, MiB", first.sims_rss_kib / 1024.0, last.sims_rss_kib / 1024.0, 8);
  ok &= flat("WAL, MiB", first.wal_bytes / 1048576.0, last.wal_bytes / 1048576.0, 4);
  const int experiments = last.succeeded + last.failed - first.succeeded - first.failed;
  if (experiments > 0) {
    std::printf("  database grows with its history: %.1f KiB per experiment\n",
                (last.db_bytes - first.db_bytes) / 1024.0 / experiments);
  }
  std::printf("verdict: %s; %d experiment(s) failed\n", ok ? "flat" : "GREW", last.failed);
  return ok && last.failed == 0;
}

int Run(const Options& o) {
  const std::string bin_dir = fs::read_symlink("/proc/self/exe").parent_path().string();
  const std::string work_dir = MakeWorkDir("soak_bench");
  if (work_dir.empty()) return 1;
  std::set<pid_t> all_instances;
  std::vector<Sample> samples;
  int rc = 0;
  {
    Daemon daemon(bin_dir, work_dir, o.time_scale);
    const std::string target = daemon.WaitForAddress();
    if (target.empty()) return 1;
    auto stub = Connect(target);
    std::printf("machine: %s\nsoak: %.0f min, a sample every %d s, sim time scale %g\n",
                Machine().c_str(), o.minutes, o.sample_seconds, o.time_scale);
    std::printf("%7s %9s %6s %10s %7s %5s %12s %9s %9s\n", "minute", "succeeded", "failed",
                "RSS MiB", "threads", "fds", "sims RSS MiB", "DB MiB", "WAL MiB");
    const absl::Time start = absl::Now();
    absl::Time next_sample = start;
    Sample now;
    std::string base_id;
    std::set<pid_t> current_instances;
    for (int i = 0; absl::Now() - start < absl::Minutes(o.minutes) && daemon.Running(); ++i) {
      grpc::ClientContext ctx;
      v1::SubmitExperimentResponse submitted;
      grpc::Status s = stub->SubmitExperiment(
          &ctx, base_id.empty() ? Base(o) : Delta(o, base_id, i), &submitted);
      v1::Experiment done;
      if (!s.ok() || !WaitFinal(*stub, submitted.experiment().id(), &done)) {
        std::fprintf(stderr, "submission %d: %s\n", i, s.error_message().c_str());
        rc = 1;
        break;
      }
      const bool ok = done.state() == v1::EXPERIMENT_STATE_SUCCEEDED;
      ++(ok ? now.succeeded : now.failed);
      if (!ok) std::fprintf(stderr, "%s: %s\n", done.id().c_str(), done.blocker().c_str());
      if (base_id.empty() && ok) base_id = done.id();
      // The instances running now: launches replace some of them.
      std::set<pid_t> launched;
      CollectInstancePids(done, &launched);
      for (pid_t pid : launched) current_instances.insert(pid);
      all_instances.insert(launched.begin(), launched.end());
      if (absl::Now() < next_sample) continue;
      next_sample += absl::Seconds(o.sample_seconds);
      now.minutes = absl::ToDoubleMinutes(absl::Now() - start);
      now.rss_kib = ProcStatusField(daemon.pid(), "VmRSS");
      now.threads = ProcStatusField(daemon.pid(), "Threads");
      now.fds = OpenDescriptors(daemon.pid());
      now.sims_rss_kib = 0;
      for (auto it = current_instances.begin(); it != current_instances.end();) {
        const int64_t rss = ProcStatusField(*it, "VmRSS");
        if (rss < 0) {
          it = current_instances.erase(it);  // Gone: relaunched.
          continue;
        }
        now.sims_rss_kib += rss;
        ++it;
      }
      now.db_bytes = FileBytes(daemon.state_dir() + "/servelab.db");
      now.wal_bytes = FileBytes(daemon.state_dir() + "/servelab.db-wal");
      samples.push_back(now);
      PrintSample(now);
    }
    daemon.Stop();
  }
  KillInstances(all_instances);
  fs::remove_all(work_dir);
  const bool flat = PrintVerdict(samples);
  return rc != 0 ? rc : (flat ? 0 : 2);
}

}  // namespace
}  // namespace servelab::bench

int main(int argc, char** argv) {
  servelab::bench::Options o;
  o.spec = std::string(SERVELAB_SOURCE_DIR) + "/deploy/examples/pd-quick.yaml";
  CLI::App app{"soak_bench: back-to-back experiments; RSS, fds, DB and WAL over time (issue 10)"};
  app.add_option("--spec", o.spec, "Base spec file")->capture_default_str();
  app.add_option("--minutes", o.minutes, "How long to run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--sample-seconds", o.sample_seconds, "Time between printed samples")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--time-scale", o.time_scale, "servelabd --sim-time-scale")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);
  o.spec = std::filesystem::absolute(o.spec).string();
  return servelab::bench::Run(o);
}
