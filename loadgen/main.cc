// servelab-load: the load generator as a standalone tool. Flags, then the
// same library calls the daemon makes: dataset, schedule, runner, analysis.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "analysis/analysis.h"
#include "analysis/report.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "loadgen/dataset.h"
#include "loadgen/load_runner.h"
#include "loadgen/realtime.h"
#include "loadgen/record_file.h"
#include "loadgen/schedule.h"

namespace servelab::loadgen {
namespace {

int Fail(const std::string& message, int code = 1) {
  std::cerr << "servelab-load: " << message << "\n";
  return code;
}

absl::Status PrintResult(const v1::Result& result, const std::string& format) {
  if (format == "json") {
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    options.always_print_primitive_fields = true;
    options.add_whitespace = true;
    std::string json;
    auto s = google::protobuf::util::MessageToJsonString(result, &json, options);
    if (!s.ok()) return absl::InternalError(s.ToString());
    std::cout << json;
  } else {
    std::cout << analysis::FormatResult(result);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Result> AnalyzeRecords(const std::vector<v1::RequestRecord>& records,
                                          const v1::ExperimentSpec& spec) {
  absl::StatusOr<v1::Result> result = analysis::Analyze(records, spec);
  if (result.ok())
    *result->mutable_computed_at() =
        google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(absl::Now()));
  return result;
}

// Cancels the runner on SIGINT / SIGTERM, so an interrupted load still
// writes every record (cancelled ones included) before exiting.
class SignalCanceller {
 public:
  SignalCanceller() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }
  void Watch(LoadRunner* runner) {
    thread_ = std::thread([this, runner] {
      int sig = 0;
      sigwait(&set_, &sig);
      if (sig == SIGINT || sig == SIGTERM) runner->Cancel();
    });
    thread_.detach();
  }

 private:
  sigset_t set_;
  std::thread thread_;
};

struct Flags {
  std::string url;
  int num_requests = 0;
  int concurrency = 0;
  double rate = 0;
  std::string arrival = "poisson";
  double burstiness = 1;
  int input_tokens = 0;
  int input_range = 0;
  int output_tokens = 0;
  int output_range = 0;
  double prefix_ratio = 0;
  int prefix_groups = 0;
  bool no_cache_seed = false;
  std::string prompt_file;
  int64_t seed = 0;
  int device_count = 1;
  double steady_fraction = 0;
  std::string out;
  std::string format = "text";
  std::string api = "completions";
  std::string model;
  double timeout_seconds = 600;
  std::string load_tag;
  std::string experiment_id = "load";
  int realtime_priority = 0;
};

// Checks every flag before anything is sent; messages name the flag.
absl::Status Validate(const Flags& f) {
  if (f.url.empty()) return absl::InvalidArgumentError("--url is required");
  if (f.num_requests <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--num-requests must be > 0, got ", f.num_requests));
  }
  if (f.concurrency <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--concurrency must be > 0, got ", f.concurrency));
  }
  if (!(f.rate >= 0))
    return absl::InvalidArgumentError(absl::StrCat("--rate must be >= 0, got ", f.rate));
  if (!(f.burstiness > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("--burstiness must be > 0, got ", f.burstiness));
  }
  if (f.output_tokens <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--output-tokens must be > 0, got ", f.output_tokens));
  }
  if (f.prompt_file.empty() && f.input_tokens <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--input-tokens must be > 0, got ", f.input_tokens));
  }
  if (!(f.prefix_ratio >= 0 && f.prefix_ratio < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--prefix-ratio must be in [0, 1), got ", f.prefix_ratio));
  }
  if (f.prefix_groups < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--prefix-groups must be >= 0, got ", f.prefix_groups));
  }
  if (f.device_count < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--device-count must be >= 0, got ", f.device_count));
  if (!(f.timeout_seconds > 0)) return absl::InvalidArgumentError("--timeout must be > 0");
  // Out of range or not permitted, refused now, not when the load starts:
  // before --out is created.
  if (absl::Status s = CheckRealtimeAllowed(f.realtime_priority); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("--realtime-priority: ", s.message()));
  }
  return absl::OkStatus();
}

v1::ExperimentSpec SpecFromFlags(const Flags& f) {
  v1::ExperimentSpec spec;
  spec.set_scenario("servelab-load");
  v1::WorkloadSpec* w = spec.mutable_workload();
  v1::DatasetSpec* d = w->mutable_dataset();
  d->set_input_tokens(f.input_tokens);
  d->set_input_tokens_range(f.input_range);
  d->set_output_tokens(f.output_tokens);
  d->set_output_tokens_range(f.output_range);
  d->set_prefix_cache_ratio(f.prefix_ratio);
  d->set_prefix_groups(f.prefix_groups);
  d->set_seed(f.seed);
  if (!f.prompt_file.empty()) d->mutable_file()->set_path(f.prompt_file);
  w->set_num_requests(f.num_requests);
  w->set_concurrency(f.concurrency);
  w->set_request_rate(f.rate);
  w->set_arrival(f.arrival == "constant" ? v1::ARRIVAL_CONSTANT
                 : f.arrival == "gamma"  ? v1::ARRIVAL_GAMMA
                                         : v1::ARRIVAL_POISSON);
  w->set_burstiness(f.burstiness);
  w->set_cache_prep(f.no_cache_seed ? v1::CACHE_PREP_RESET : v1::CACHE_PREP_AUTO);
  w->set_api(f.api == "chat"       ? v1::API_CHAT_COMPLETIONS
             : f.api == "generate" ? v1::API_GENERATE
                                   : v1::API_COMPLETIONS);
  spec.mutable_analysis()->set_device_count(f.device_count);
  spec.mutable_analysis()->set_steady_min_inflight_fraction(f.steady_fraction);
  return spec;
}

int RunLoad(const Flags& f, SignalCanceller& signals) {
  if (absl::Status s = Validate(f); !s.ok()) return Fail(std::string(s.message()), 2);
  v1::ExperimentSpec spec = SpecFromFlags(f);
  const v1::WorkloadSpec& w = spec.workload();
  absl::StatusOr<PromptSet> prompts = BuildPrompts(w.dataset(), w.num_requests());
  if (!prompts.ok()) return Fail(std::string(prompts.status().message()), 2);
  absl::StatusOr<std::vector<int64_t>> planned = PlanArrivals(w, w.num_requests());
  if (!planned.ok()) return Fail(std::string(planned.status().message()), 2);
  absl::StatusOr<PromptSet> seeds = BuildCacheSeedPrompts(w.dataset());
  if (!seeds.ok()) return Fail(std::string(seeds.status().message()), 2);
  if (f.no_cache_seed) *seeds = PromptSet();

  std::unique_ptr<RecordSink> sink;
  MemorySink memory;
  if (!f.out.empty()) {
    absl::StatusOr<std::unique_ptr<RecordSink>> file = OpenRecordFile(f.out, spec);
    if (!file.ok()) return Fail(absl::StrCat("--out: ", file.status().message()), 2);
    sink = *std::move(file);
  }
  RecordSink& target = sink ? *sink : memory;

  LoadOptions options;
  options.url = f.url;
  options.api = w.api();
  options.model = f.model;
  options.concurrency = w.concurrency();
  options.request_timeout = absl::Seconds(f.timeout_seconds);
  options.load_tag = f.load_tag;
  options.experiment_id = f.experiment_id;
  options.realtime_priority = f.realtime_priority;
  absl::StatusOr<std::unique_ptr<LoadRunner>> runner = LoadRunner::Create(options);
  if (!runner.ok()) return Fail(absl::StrCat("--url: ", runner.status().message()), 2);
  signals.Watch(runner->get());

  if (!seeds->empty()) {
    // One seed request per prefix group, before the formal load, in its own
    // phase: its wall time and summed latency are reported separately.
    LoadOptions seed_options = options;
    seed_options.phase = v1::PHASE_CACHE_SEED;
    absl::StatusOr<std::unique_ptr<LoadRunner>> seeder = LoadRunner::Create(seed_options);
    if (!seeder.ok()) return Fail(std::string(seeder.status().message()));
    absl::StatusOr<LoadSummary> s = (*seeder)->Run(*seeds, {}, target);
    if (!s.ok()) return Fail(absl::StrCat("--url: ", s.status().message()));
    std::cerr << "cache seed: " << s->completed << "/" << s->planned << " completed\n";
  }
  absl::StatusOr<LoadSummary> summary = (*runner)->Run(*prompts, *planned, target);
  if (!summary.ok()) return Fail(absl::StrCat("--url: ", summary.status().message()));
  std::cerr << absl::StrCat("load: ", summary->sent, " sent, ", summary->completed, " completed, ",
                            summary->failed, " failed, ", summary->not_sent, " not sent, model \"",
                            summary->model, "\", wall ", absl::FormatDuration(summary->wall), "\n");
  // The records' times are the kernel's receive stamps; this is how late this
  // process read them: when large, its own core was the bottleneck.
  std::cerr << absl::StrCat("client read lag (first tokens): p50 ",
                            absl::FormatDuration(summary->first_token_read_lag_p50), ", p99 ",
                            absl::FormatDuration(summary->first_token_read_lag_p99), ", max ",
                            absl::FormatDuration(summary->first_token_read_lag_max), "\n");
  sink.reset();  // Close the file before reading it back.

  // Analysis always reads the stored rows, exactly as `analyze FILE` does.
  std::vector<v1::RequestRecord> records;
  if (!f.out.empty()) {
    absl::StatusOr<RecordFile> file = ReadRecordFile(f.out);
    if (!file.ok()) return Fail(std::string(file.status().message()));
    records = std::move(file->records);
  } else {
    records = memory.records();
  }
  absl::StatusOr<v1::Result> result = AnalyzeRecords(records, spec);
  if (!result.ok()) return Fail(std::string(result.status().message()));
  if (absl::Status s = PrintResult(*result, f.format); !s.ok())
    return Fail(std::string(s.message()));
  return 0;
}

int AnalyzeFile(const std::string& path, const std::string& format, std::optional<int> device_count,
                std::optional<int> concurrency) {
  absl::StatusOr<RecordFile> file = ReadRecordFile(path);
  if (!file.ok()) return Fail(std::string(file.status().message()), 2);
  if (device_count) file->spec.mutable_analysis()->set_device_count(*device_count);
  if (concurrency) file->spec.mutable_workload()->set_concurrency(*concurrency);
  absl::StatusOr<v1::Result> result = AnalyzeRecords(file->records, file->spec);
  if (!result.ok()) return Fail(std::string(result.status().message()));
  if (absl::Status s = PrintResult(*result, format); !s.ok()) return Fail(std::string(s.message()));
  return 0;
}

int Main(int argc, char** argv) {
  SignalCanceller signals;
  Flags f;
  CLI::App app{"servelab-load: exact, timed load against an OpenAI-compatible server"};
  app.add_option("--url", f.url, "Server base URL, e.g. http://127.0.0.1:8000");
  app.add_option("--num-requests,-n", f.num_requests, "N: requests of the formal load");
  app.add_option("--concurrency,-c", f.concurrency, "C: requests in flight at most");
  app.add_option("--rate", f.rate, "Requests per second (0: as fast as C allows)");
  app.add_option("--arrival", f.arrival, "Arrival process")
      ->check(CLI::IsMember({"poisson", "constant", "gamma"}));
  app.add_option("--burstiness", f.burstiness, "Gamma shape (1 = poisson; < 1 burstier)");
  app.add_option("--input-tokens", f.input_tokens, "Prompt length in tokens");
  app.add_option("--input-range", f.input_range, "Prompt length spread: uniform +/- this");
  app.add_option("--output-tokens", f.output_tokens, "Output length (max_tokens, with ignore_eos)");
  app.add_option("--output-range", f.output_range, "Output length spread: uniform +/- this");
  app.add_option("--prefix-ratio", f.prefix_ratio,
                 "Target per-request prefix-cache hit ratio [0, 1)");
  app.add_option("--prefix-groups", f.prefix_groups, "Groups sharing a prefix (default 1)");
  app.add_flag("--no-cache-seed", f.no_cache_seed, "Do not send the cache-seed requests first");
  app.add_option("--prompt-file", f.prompt_file, "JSONL prompt file instead of synthetic prompts");
  app.add_option("--seed", f.seed, "Seed of the dataset and the schedule");
  app.add_option("--device-count", f.device_count, "Devices to normalize per-device figures by");
  app.add_option("--steady-fraction", f.steady_fraction,
                 "Steady window: in flight >= this fraction of C (default 1)");
  app.add_option("--out", f.out, "Record file: FILE.sqlite or FILE.jsonl (must not exist)");
  app.add_option("-o,--output", f.format, "Report format")->check(CLI::IsMember({"text", "json"}));
  app.add_option("--api", f.api,
                 "Endpoint: completions (/v1/completions), chat (/v1/chat/completions) or "
                 "generate (SGLang's /generate with input_ids)")
      ->check(CLI::IsMember({"completions", "chat", "generate"}));
  app.add_option("--model", f.model, "Model name (default: the first the server lists)");
  app.add_option("--timeout", f.timeout_seconds, "Per-request timeout, seconds");
  app.add_option("--load-tag", f.load_tag, "Value of the x-servelab-load header");
  app.add_option("--experiment-id", f.experiment_id, "experiment_id of the records");
  app.add_option("--realtime-priority", f.realtime_priority,
                 "Run the sending thread SCHED_FIFO at this priority (1-99) so that no other "
                 "thread on its core delays an arrival; needs root, CAP_SYS_NICE or ulimit -r. "
                 "0: ordinary scheduling")
      ->capture_default_str();

  CLI::App* analyze = app.add_subcommand("analyze", "Recompute the analysis of a record file");
  std::string path;
  std::string analyze_format = "text";
  std::optional<int> device_count, concurrency;
  analyze->add_option("FILE", path, "Record file (.sqlite or .jsonl)")->required();
  analyze->add_option("-o,--output", analyze_format, "Report format")
      ->check(CLI::IsMember({"text", "json"}));
  analyze->add_option("--device-count", device_count, "Override the stored device count");
  analyze->add_option("--concurrency", concurrency, "Override the stored target concurrency");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (analyze->parsed()) {
    return AnalyzeFile(path, analyze_format != "text" ? analyze_format : f.format, device_count,
                       concurrency);
  }
  return RunLoad(f, signals);
}

}  // namespace
}  // namespace servelab::loadgen

int main(int argc, char** argv) { return servelab::loadgen::Main(argc, argv); }
