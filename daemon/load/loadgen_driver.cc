#include "daemon/load/loadgen_driver.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "daemon/core/ledger.h"
#include "loadgen/dataset.h"
#include "loadgen/load_runner.h"
#include "loadgen/realtime.h"
#include "loadgen/schedule.h"

namespace servelab::load {
namespace {

struct Prepared {
  loadgen::PromptSet prompts;
  std::vector<int64_t> planned_send_ns;  // Empty: all at once (under C).
  int concurrency = 1;
};

// Everything comes from the frozen spec: this is the one place that turns a
// phase into prompts, so preflight's plan and the run agree by construction.
absl::StatusOr<Prepared> Prepare(const core::LoadJob& job) {
  const v1::ExperimentSpec& spec = *job.spec;
  const v1::WorkloadSpec& workload = spec.workload();
  Prepared p;
  switch (job.phase) {
    case v1::PHASE_FORMAL: {
      SERVELAB_ASSIGN_OR_RETURN(p.prompts,
                                loadgen::BuildPrompts(workload.dataset(), workload.num_requests()));
      SERVELAB_ASSIGN_OR_RETURN(p.planned_send_ns,
                                loadgen::PlanArrivals(workload, workload.num_requests()));
      p.concurrency = workload.concurrency();
      break;
    }
    case v1::PHASE_WARMUP: {
      SERVELAB_ASSIGN_OR_RETURN(
          p.prompts, loadgen::BuildWarmupPrompts(workload.dataset(), spec.deployment().warmup()));
      p.concurrency = std::max<int>(1, std::min<int>(workload.concurrency(), p.prompts.size()));
      break;
    }
    case v1::PHASE_CACHE_SEED: {
      SERVELAB_ASSIGN_OR_RETURN(p.prompts, loadgen::BuildCacheSeedPrompts(workload.dataset()));
      p.concurrency = std::max<int>(1, std::min<int>(workload.concurrency(), p.prompts.size()));
      break;
    }
    case v1::PHASE_ROUTE_VERIFY: {
      v1::WarmupSpec one = spec.deployment().warmup();
      one.set_requests(1);
      SERVELAB_ASSIGN_OR_RETURN(p.prompts, loadgen::BuildWarmupPrompts(workload.dataset(), one));
      p.concurrency = 1;
      break;
    }
    default:
      return absl::InvalidArgumentError("phase: unsupported");
  }
  return p;
}

// The name requests ask for: decode's (it answers the client), else
// prefill's; empty (the sim's default model) lets the runner look it up.
std::string ServedModel(const v1::ExperimentSpec& spec) {
  for (const v1::InstanceSpec* side : {&spec.deployment().decode(), &spec.deployment().prefill()}) {
    if (!side->served_model_name().empty()) return side->served_model_name();
    if (!side->model().empty()) return side->model();
  }
  return "";
}

class CallbackSink : public loadgen::RecordSink {
 public:
  explicit CallbackSink(
      const std::function<absl::Status(const std::vector<v1::RequestRecord>&)>& on_records)
      : on_records_(on_records) {}
  absl::Status Write(const std::vector<v1::RequestRecord>& records) override {
    for (const v1::RequestRecord& r : records) {
      if (r.end_ns() > 0 && r.sent_ns() > 0) summed_ns_ += r.end_ns() - r.sent_ns();
    }
    return on_records_(records);
  }
  int64_t summed_ns() const { return summed_ns_; }

 private:
  const std::function<absl::Status(const std::vector<v1::RequestRecord>&)>& on_records_;
  int64_t summed_ns_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<LoadgenDriver>> LoadgenDriver::Create(int realtime_priority) {
  SERVELAB_RETURN_IF_ERROR(loadgen::CheckRealtimeAllowed(realtime_priority));
  return std::unique_ptr<LoadgenDriver>(new LoadgenDriver(realtime_priority));
}

absl::StatusOr<core::LoadPlanSummary> LoadgenDriver::Plan(const core::LoadJob& job) {
  SERVELAB_ASSIGN_OR_RETURN(Prepared p, Prepare(job));
  core::LoadPlanSummary summary;
  summary.requests = static_cast<int64_t>(p.prompts.size());
  if (!p.planned_send_ns.empty())
    summary.arrival_span = absl::Nanoseconds(p.planned_send_ns.back());
  // Lengths only: the plan makes no token id (a formal set can be N x 8K).
  for (size_t i = 0; i < p.prompts.size(); ++i) {
    const loadgen::PromptShape shape = p.prompts.Shape(i);
    summary.max_request_tokens =
        std::max<int64_t>(summary.max_request_tokens, shape.input_tokens + shape.output_tokens);
  }
  return summary;
}

absl::StatusOr<core::LoadOutcome> LoadgenDriver::Run(
    const core::LoadJob& job,
    const std::function<absl::Status(const std::vector<v1::RequestRecord>&)>& on_records,
    const std::function<void(const core::LoadTick&)>& on_tick, std::atomic<bool>& cancel) {
  SERVELAB_ASSIGN_OR_RETURN(Prepared p, Prepare(job));
  loadgen::LoadOptions options;
  options.url = job.url;
  options.api = job.spec->workload().api();
  options.model = ServedModel(*job.spec);
  options.concurrency = p.concurrency;
  options.request_timeout = core::FromDuration(job.spec->limits().request_timeout());
  options.load_tag = job.load_tag;
  options.experiment_id = job.experiment_id;
  options.phase = job.phase;
  options.attempt = job.attempt;
  options.realtime_priority = realtime_priority_;
  SERVELAB_ASSIGN_OR_RETURN(std::unique_ptr<loadgen::LoadRunner> runner,
                            loadgen::LoadRunner::Create(options));
  CallbackSink sink(on_records);

  // The runner blocks this thread; a watcher turns cancel and the deadline
  // into Cancel() and reports progress. It waits on a notification, not a
  // sleep, so the load's end is not held up to a tick for the join (that
  // added ~10 ms to every warmup, seed and formal load).
  absl::Notification done;
  std::thread watcher([&] {
    do {
      if (cancel.load() || absl::Now() >= job.deadline) runner->Cancel();
      loadgen::LoadProgress progress = runner->progress();
      on_tick(core::LoadTick{progress.sent, progress.completed, progress.failed});
    } while (!done.WaitForNotificationWithTimeout(absl::Milliseconds(20)));
  });
  absl::StatusOr<loadgen::LoadSummary> summary = runner->Run(p.prompts, p.planned_send_ns, sink);
  done.Notify();
  watcher.join();
  SERVELAB_RETURN_IF_ERROR(summary.status());
  return core::LoadOutcome{.planned = summary->planned,
                           .sent = summary->sent,
                           .completed = summary->completed,
                           .failed = summary->failed,
                           .not_sent = summary->not_sent,
                           .wall = summary->wall,
                           .summed_latency = absl::Nanoseconds(sink.summed_ns()),
                           .all_ended = true,
                           .first_token_read_lag_p99 = summary->first_token_read_lag_p99};
}

}  // namespace servelab::load
