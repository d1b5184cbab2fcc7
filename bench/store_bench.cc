// store_bench: does the daemon's cost per call stay flat as its history
// grows (issue 9, P8 and P9)? A program that prints figures, not a test.
//
//   build/bin/store_bench [--experiments 10000] [--records 20000000]
//       [--samples 200] [--spec deploy/examples/pd-quick.yaml] [--time-scale 0.05]
//
// 1. Runs --spec and one concurrency delta on servelab-sim through a real
//    servelabd: two real experiments with their raw records.
// 2. Restarts servelabd --paused on that store and times, --samples times
//    each, the calls a user makes: SubmitExperiment (a delta of the base; it
//    queues, and is cancelled untimed), GetExperiment (status),
//    ListExperiments and GetSummary; then, with the daemon stopped, the
//    commit of a stage transition through SqliteStore.
// 3. Stops it and grows the same SQLite file through SqliteStore to
//    --experiments experiments and --records raw record rows, copies of the
//    two real ones (their records repeated to the size each copy needs).
// 4. Times the stage transition's commit on the grown store, then restarts
//    servelabd --paused on it (the restart time is a figure: recovery reads
//    the store) and times the same calls.
// 5. Runs two more concurrency deltas on the grown store, unpaused.
// Prints p50/p99 of each call on both stores with their ratio (target: the
// grown store within 2x), the database size and the bytes on disk per 1 M
// streamed chunks, the daemon's RSS on both stores, and a delta's analysis
// time on both (the decision's baseline is the scenario's best).
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/bench_common.h"
#include "bench/bench_daemon.h"
#include "storage/sqlite_store.h"

namespace servelab::bench {
namespace {

namespace fs = std::filesystem;

constexpr double kTargetRatio = 2.0;
// Both stores hold at least this many experiments before the first timed
// list (the untimed warm-up submits), so both list a full page.
constexpr int kListPage = 20;
// Enough that the mean carries SQLite's WAL checkpoints, run in the commit
// that takes the WAL past 1000 pages (about one stage commit in 90).
constexpr int kStageCommits = 2000;

struct CallTimes {
  std::map<std::string, std::vector<double>> ms;  // call name -> samples
};

// Times `call` once; false (and a message) when it failed.
bool Timed(CallTimes& times, const std::string& name, const std::function<grpc::Status()>& call) {
  absl::Time start = absl::Now();
  grpc::Status s = call();
  times.ms[name].push_back(Ms(absl::Now() - start));
  if (!s.ok()) std::fprintf(stderr, "%s: %s\n", name.c_str(), s.error_message().c_str());
  return s.ok();
}

// The four calls, `samples` times, against a paused daemon.
bool MeasureCalls(v1::ServeLab::Stub& stub, const std::string& base_id, int samples,
                  CallTimes& times) {
  CallTimes warmup;
  for (int i = -kListPage; i < samples; ++i) {
    CallTimes& into = i < 0 ? warmup : times;
    v1::SubmitExperimentRequest submit;
    submit.set_base_id(base_id);
    submit.add_set(absl::StrCat("workload.concurrency=", 4 + (i + kListPage) % 13));
    v1::SubmitExperimentResponse submitted;
    v1::Experiment got, cancelled;
    v1::ListExperimentsResponse listed;
    v1::Summary summary;
    bool ok = Timed(into, "submit", [&] {
      grpc::ClientContext ctx;
      return stub.SubmitExperiment(&ctx, submit, &submitted);
    });
    ok = ok && Timed(into, "status", [&] {
           grpc::ClientContext ctx;
           v1::GetExperimentRequest get;
           get.set_id(base_id);
           return stub.GetExperiment(&ctx, get, &got);
         });
    ok = ok && Timed(into, "list", [&] {
           grpc::ClientContext ctx;
           v1::ListExperimentsRequest page;
           page.set_page_size(kListPage);
           return stub.ListExperiments(&ctx, page, &listed);
         });
    ok = ok && Timed(into, "summary", [&] {
           grpc::ClientContext ctx;
           return stub.GetSummary(&ctx, v1::GetSummaryRequest(), &summary);
         });
    grpc::ClientContext ctx;
    v1::CancelExperimentRequest cancel;
    cancel.set_id(submitted.experiment().id());
    if (!ok || !stub.CancelExperiment(&ctx, cancel, &cancelled).ok()) return false;
  }
  return true;
}

// Copies of `templates`, with their formal records repeated to
// `rows_each` rows, until the store holds `experiments` experiments.
// Returns the number of chunks written, or -1.
int64_t GrowStore(const std::string& db_path, const std::vector<std::string>& templates,
                  int experiments, int64_t rows_each) {
  absl::StatusOr<std::unique_ptr<storage::SqliteStore>> store = storage::SqliteStore::Open(db_path);
  if (!store.ok()) {
    std::fprintf(stderr, "open %s: %s\n", db_path.c_str(), store.status().ToString().c_str());
    return -1;
  }
  std::vector<v1::Experiment> copies;
  std::vector<std::vector<v1::RequestRecord>> records;
  for (const std::string& id : templates) {
    absl::StatusOr<v1::Experiment> e = (*store)->GetExperiment(id);
    absl::StatusOr<std::vector<v1::RequestRecord>> r =
        (*store)->ListRequests(id, v1::PHASE_FORMAL, 0);
    if (!e.ok() || !r.ok() || r->empty()) {
      std::fprintf(stderr, "template %s has no formal records\n", id.c_str());
      return -1;
    }
    std::vector<v1::RequestRecord> rows;
    for (int64_t i = 0; i < rows_each; ++i) {
      v1::RequestRecord row = (*r)[i % r->size()];
      row.set_attempt(1 + static_cast<int>(i / r->size()));
      rows.push_back(std::move(row));
    }
    copies.push_back(*std::move(e));
    records.push_back(std::move(rows));
  }
  absl::StatusOr<std::vector<v1::Experiment>> existing = (*store)->ListExperiments({});
  int64_t chunks = 0;
  const absl::Time start = absl::Now();
  for (int n = existing.ok() ? existing->size() : 0, i = 0; n < experiments; ++n, ++i) {
    const size_t t = i % copies.size();
    core::Event event{.at = absl::Now(), .kind = "submitted", .detail = "store_bench copy"};
    absl::StatusOr<std::string> id =
        (*store)->CreateExperimentWithRecords(copies[t], event, records[t]);
    if (!id.ok()) {
      std::fprintf(stderr, "copy %d: %s\n", i, id.status().ToString().c_str());
      return -1;
    }
    for (const v1::RequestRecord& r : records[t]) chunks += r.chunk_ns_size();
    if ((n + 1) % (experiments / 10 + 1) == 0 || n + 1 == experiments) {
      std::fprintf(stderr, "growing the store: %d / %d experiments, %.0f s\n", n + 1, experiments,
                   absl::ToDoubleSeconds(absl::Now() - start));
    }
  }
  return chunks;
}

// The commit the runner makes each time a stage starts or ends (an ordered
// write), timed kStageCommits times through SqliteStore with the daemon
// stopped: an in-flight copy of `template_id` whose stages end one after
// another. The times, in ms, go to `ms`.
bool TimeStageCommits(const std::string& db_path, const std::string& template_id,
                      std::vector<double>& ms) {
  absl::StatusOr<std::unique_ptr<storage::SqliteStore>> store = storage::SqliteStore::Open(db_path);
  absl::StatusOr<v1::Experiment> e =
      store.ok() ? (*store)->GetExperiment(template_id) : store.status();
  if (!e.ok() || e->stages_size() < 2) {
    std::fprintf(stderr, "stage commits: %s\n", e.status().ToString().c_str());
    return false;
  }
  core::Event event{.at = absl::Now(), .kind = "submitted", .detail = "store_bench in flight"};
  e->set_state(v1::EXPERIMENT_STATE_RUNNING);
  for (int i = 1; i < e->stages_size(); ++i) {
    e->mutable_stages(i)->set_status(v1::STAGE_STATUS_PENDING);
    e->mutable_stages(i)->clear_ended_at();
  }
  absl::StatusOr<std::string> id = (*store)->CreateExperiment(*e, event);
  if (!id.ok()) return false;
  e->set_id(*id);
  event.durability = core::Durability::kOrdered;
  for (int i = 0; i < kStageCommits; ++i) {
    v1::Stage& stage = *e->mutable_stages(1 + i % (e->stages_size() - 1));
    stage.set_status(v1::STAGE_STATUS_SUCCEEDED);
    stage.mutable_ended_at()->set_seconds(absl::ToUnixSeconds(absl::Now()));
    stage.mutable_ended_at()->set_nanos(i);
    event.at = absl::Now();
    const absl::Time start = absl::Now();
    absl::Status s = (*store)->UpdateExperiment(*e, event);
    ms.push_back(Ms(absl::Now() - start));
    if (!s.ok()) {
      std::fprintf(stderr, "stage commit: %s\n", s.ToString().c_str());
      return false;
    }
  }
  return true;
}

void PrintCalls(const CallTimes& small, const CallTimes& grown) {
  std::printf("  %-8s %12s %12s %12s %12s %8s\n", "call", "p50 small", "p99 small", "p50 grown",
              "p99 grown", "p99 x");
  for (const auto& [name, samples] : small.ms) {
    const std::vector<double>& g = grown.ms.at(name);
    const double ratio = Percentile(g, 0.99) / Percentile(samples, 0.99);
    std::printf("  %-8s %12.3f %12.3f %12.3f %12.3f %8.2f  target <= %.0fx: %s\n", name.c_str(),
                Percentile(samples, 0.5), Percentile(samples, 0.99), Percentile(g, 0.5),
                Percentile(g, 0.99), ratio, kTargetRatio, ratio <= kTargetRatio ? "MET" : "MISSED");
  }
}

// A p99 over these is a lottery on where the checkpoints fall; the mean
// counts each one.
void PrintStageCommits(const std::vector<double>& small, const std::vector<double>& grown) {
  const double ratio = Mean(grown) / Mean(small);
  std::printf(
      "  stage commit (ordered, through SqliteStore with the daemon stopped; %d each):\n"
      "           p50 small %.3f, grown %.3f; mean small %.3f, grown %.3f; mean x %.2f  "
      "target <= %.0fx: %s\n",
      kStageCommits, Percentile(small, 0.5), Percentile(grown, 0.5), Mean(small), Mean(grown),
      ratio, kTargetRatio, ratio <= kTargetRatio ? "MET" : "MISSED");
}

struct Options {
  std::string spec;
  int experiments = 10000;
  int64_t records = 20000000;
  int samples = 200;
  double time_scale = 0.05;
};

// Time spent in the analyze and decide stages of `e`: the decision reads the
// scenario's history for its baseline.
double AnalysisMs(const v1::Experiment& e) {
  double ms = 0;
  for (const v1::Stage& stage : e.stages()) {
    if (stage.name() == v1::STAGE_ANALYZE || stage.name() == v1::STAGE_DECIDE) {
      ms += Ms(FromProto(stage.ended_at()) - FromProto(stage.started_at()));
    }
  }
  return ms;
}

// Submits `req` and waits for its final state, left in `done`; true when it
// succeeded.
bool RunToSuccess(v1::ServeLab::Stub& stub, const v1::SubmitExperimentRequest& req,
                  v1::Experiment& done) {
  grpc::ClientContext ctx;
  v1::SubmitExperimentResponse resp;
  return stub.SubmitExperiment(&ctx, req, &resp).ok() &&
         WaitFinal(stub, resp.experiment().id(), &done) &&
         done.state() == v1::EXPERIMENT_STATE_SUCCEEDED;
}

// Steps 1: the two real experiments. Returns their ids, or empty; the
// delta's analysis time goes to `analysis_ms`.
std::vector<std::string> RunTemplates(const std::string& bin_dir, const std::string& work_dir,
                                      const Options& o, std::set<pid_t>& instance_pids,
                                      double& analysis_ms) {
  Daemon daemon(bin_dir, work_dir, o.time_scale);
  std::string target = daemon.WaitForAddress();
  if (target.empty()) return {};
  auto stub = Connect(target);
  std::vector<std::string> ids;
  v1::SubmitExperimentRequest req;
  req.set_spec_text(ReadFile(o.spec));
  req.set_spec_name(o.spec);
  req.set_base_dir(fs::path(o.spec).parent_path().string());
  for (int i = 0; i < 2; ++i) {
    v1::Experiment done;
    if (!RunToSuccess(*stub, req, done)) {
      CollectInstancePids(done, &instance_pids);
      std::fprintf(stderr, "template experiment failed; log:\n%s\n",
                   ReadFile(daemon.log_path()).c_str());
      return {};
    }
    CollectInstancePids(done, &instance_pids);
    ids.push_back(done.id());
    analysis_ms = AnalysisMs(done);
    req = v1::SubmitExperimentRequest();
    req.set_base_id(ids.front());
    req.add_set("workload.concurrency=12");
  }
  return ids;
}

// Steps 2 and 4: a paused daemon on the store, the calls timed.
bool MeasurePaused(const std::string& bin_dir, const std::string& work_dir, const Options& o,
                   const std::string& base_id, CallTimes& times, double& restart_ms,
                   double& rss_mib) {
  const absl::Time start = absl::Now();
  Daemon daemon(bin_dir, work_dir, o.time_scale, {"--paused"});
  std::string target = daemon.WaitForAddress();
  restart_ms = Ms(absl::Now() - start);
  if (target.empty()) return false;
  auto stub = Connect(target);
  const bool ok = MeasureCalls(*stub, base_id, o.samples, times);
  rss_mib = ProcStatusField(daemon.pid(), "VmRSS") / 1024.0;
  return ok;
}

// Step 5: two more concurrency deltas, run on the grown store by a servelabd
// that is not paused; their analysis times go to `analysis_ms`. The first
// reads the scenario's history once for the baseline index, the second not.
bool RunDeltasOnGrown(const std::string& bin_dir, const std::string& work_dir, const Options& o,
                      const std::string& base_id, double (&analysis_ms)[2]) {
  Daemon daemon(bin_dir, work_dir, o.time_scale);
  std::string target = daemon.WaitForAddress();
  if (target.empty()) return false;
  auto stub = Connect(target);
  for (int i = 0; i < 2; ++i) {
    v1::SubmitExperimentRequest req;
    req.set_base_id(base_id);
    req.add_set(absl::StrCat("workload.concurrency=", 11 + 2 * i));
    v1::Experiment done;
    if (!RunToSuccess(*stub, req, done)) {
      std::fprintf(stderr, "a delta on the grown store failed; log:\n%s\n",
                   ReadFile(daemon.log_path()).c_str());
      return false;
    }
    analysis_ms[i] = AnalysisMs(done);
  }
  return true;
}

int Run(const Options& o) {
  const std::string bin_dir = fs::read_symlink("/proc/self/exe").parent_path().string();
  const std::string work_dir = MakeWorkDir("store_bench");
  if (work_dir.empty()) return 1;
  const std::string db_path = work_dir + "/state/servelab.db";
  std::set<pid_t> instance_pids;
  CallTimes small, grown;
  std::vector<double> stage_small, stage_grown;
  double restart_small = 0, restart_grown = 0, rss_small = 0, rss_grown = 0;
  double analysis_small = 0, analysis_grown[2] = {0, 0};
  int64_t chunks = -1;
  std::vector<std::string> templates =
      RunTemplates(bin_dir, work_dir, o, instance_pids, analysis_small);
  bool ok =
      !templates.empty() &&
      MeasurePaused(bin_dir, work_dir, o, templates.front(), small, restart_small, rss_small) &&
      TimeStageCommits(db_path, templates.front(), stage_small);
  const uintmax_t small_bytes = ok ? fs::file_size(db_path) : 0;
  if (ok) {
    chunks = GrowStore(db_path, templates, o.experiments, o.records / o.experiments);
    ok = chunks > 0 && TimeStageCommits(db_path, templates.front(), stage_grown) &&
         MeasurePaused(bin_dir, work_dir, o, templates.front(), grown, restart_grown, rss_grown) &&
         RunDeltasOnGrown(bin_dir, work_dir, o, templates.front(), analysis_grown);
  }
  const uintmax_t grown_bytes = ok ? fs::file_size(db_path) : 0;
  KillInstances(instance_pids);
  fs::remove_all(work_dir);
  if (!ok) return 1;

  std::printf("machine: %s\n", Machine().c_str());
  std::printf(
      "store: small = 2 real experiments + %d submitted and cancelled; grown = %d "
      "experiments, %lld raw record rows; list = a page of %d\n\n",
      o.samples + kListPage, o.experiments + o.samples + kListPage,
      static_cast<long long>(o.records), kListPage);
  std::printf("call latency, ms (%d samples each; P8 target: grown p99 within %.0fx of small)\n",
              o.samples, kTargetRatio);
  PrintCalls(small, grown);
  PrintStageCommits(stage_small, stage_grown);
  std::printf("\ndaemon restart until serving: small %.0f ms, grown %.0f ms\n", restart_small,
              restart_grown);
  std::printf("daemon RSS after the calls: small %.1f MiB, grown %.1f MiB\n", rss_small, rss_grown);
  std::printf(
      "a concurrency delta's analyze + decide stages: small %.1f ms; grown %.1f ms for the "
      "first after the restart (it reads the scenario's history once), %.1f ms for the next\n",
      analysis_small, analysis_grown[0], analysis_grown[1]);
  std::printf(
      "database: small %.1f MiB, grown %.1f MiB; raw records on disk per 1 M chunks: "
      "%.1f MiB (P9)\n",
      small_bytes / 1048576.0, grown_bytes / 1048576.0,
      (grown_bytes - small_bytes) / 1048576.0 / (chunks / 1e6));
  return 0;
}

}  // namespace
}  // namespace servelab::bench

int main(int argc, char** argv) {
  servelab::bench::Options o;
  o.spec = std::string(SERVELAB_SOURCE_DIR) + "/deploy/examples/pd-quick.yaml";
  CLI::App app{"store_bench: call latency on a small and a grown store (issue 9, P8/P9)"};
  app.add_option("--spec", o.spec, "Base spec file")->capture_default_str();
  app.add_option("--experiments", o.experiments, "Experiments in the grown store")
      ->capture_default_str()
      ->check(CLI::Range(3, 10000000));
  app.add_option("--records", o.records, "Raw record rows in the grown store")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--samples", o.samples, "Timed calls of each kind per store")
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
