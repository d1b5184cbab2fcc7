// Stages around the formal load: preflight before anything expensive, the
// formal load itself, and the drain confirmation that releases the lane.
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/crash_points.h"
#include "common/labels.h"
#include "common/status_macros.h"
#include "daemon/core/at_once.h"
#include "daemon/core/launch_command_text.h"
#include "daemon/core/ledger.h"
#include "daemon/core/passed_env.h"
#include "daemon/core/spec/freeze.h"
#include "daemon/core/stages.h"
#include "google/protobuf/util/time_util.h"

namespace servelab::core {
namespace {

using google::protobuf::util::TimeUtil;

// True when the instance's process is known to have exited.
bool IsGone(StageEnv& env, const v1::ServingInstance& instance) {
  absl::StatusOr<bool> alive = env.instances.Alive(instance);
  return alive.ok() && !*alive;
}

// The instances that exited, e.g. during a load: "decode (pid 4242)".
absl::StatusOr<std::vector<std::string>> GoneInstances(StageEnv& env) {
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::ServingInstance> instances, env.store.ListInstances());
  std::vector<std::string> gone;
  for (const v1::ServingInstance& instance : instances) {
    if (IsGone(env, instance)) {
      gone.push_back(absl::StrCat(SideLabel(instance.side()), " (", InstancePlace(instance), ")"));
    }
  }
  return gone;
}

// An instance and what scraping it gave.
struct Scraped {
  v1::ServingInstance instance;
  absl::StatusOr<InstanceCounters> counters;
};

// Every instance that queues requests (not the router), scraped at the same
// time.
absl::StatusOr<std::vector<Scraped>> ScrapeQueues(StageEnv& env) {
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::ServingInstance> instances, env.store.ListInstances());
  // Routers keep no queue of their own.
  std::erase_if(instances, [](const auto& i) { return i.side() == v1::SIDE_ROUTER; });
  std::vector<absl::StatusOr<InstanceCounters>> counters =
      AtOnce(instances, [&](const auto& instance) { return env.instances.Scrape(instance); });
  std::vector<Scraped> scraped;
  for (size_t i = 0; i < instances.size(); ++i) {
    scraped.push_back({std::move(instances[i]), std::move(counters[i])});
  }
  return scraped;
}

// Instances that still hold requests, as "decode: 3 running, 1 waiting".
std::vector<std::string> BusyInstances(StageEnv& env, const std::vector<Scraped>& scraped) {
  std::vector<std::string> busy;
  for (const auto& [instance, c] : scraped) {
    // A process known to be gone holds no request: its requests ended (as
    // failures). One that cannot be told (Slurm unreachable) stays busy.
    if (!c.ok() && IsGone(env, instance)) continue;
    if (!c.ok()) {
      busy.push_back(absl::StrCat(SideLabel(instance.side()), ": ", c.status().message()));
    } else if (c->HoldsRequests()) {
      // In transfer counts: a request between P's and D's queues has not
      // ended, though neither side reports it running or waiting.
      busy.push_back(absl::StrCat(SideLabel(instance.side()), ": ", c->requests_running,
                                  " running, ", c->requests_waiting, " waiting, ",
                                  c->requests_in_transfer, " in transfer"));
    }
  }
  return busy;
}

}  // namespace

Endpoints NodeEndpoints(const v1::ExperimentSpec& spec) {
  Endpoints endpoints;
  // At launch the router gets each side's node address from Slurm; before,
  // the node name is the best guess (NodeName is usually the host name).
  if (spec.deployment().placement().kind() == v1::PLACEMENT_KIND_SLURM) {
    if (!spec.deployment().prefill().node().empty()) {
      endpoints.prefill_host = spec.deployment().prefill().node();
    }
    if (!spec.deployment().decode().node().empty()) {
      endpoints.decode_host = spec.deployment().decode().node();
    }
  }
  return endpoints;
}

absl::StatusOr<std::vector<LaunchCommand>> RenderDeployment(InstanceDriver& instances,
                                                            const v1::ExperimentSpec& spec,
                                                            const std::string& log_dir,
                                                            v1::Side* failed_side) {
  std::vector<LaunchCommand> commands;
  Endpoints endpoints = NodeEndpoints(spec);
  for (v1::Side side : {v1::SIDE_PREFILL, v1::SIDE_DECODE, v1::SIDE_ROUTER}) {
    absl::StatusOr<LaunchCommand> command = instances.Render(spec, side, endpoints, log_dir);
    if (!command.ok()) {
      if (failed_side != nullptr) *failed_side = side;
      return absl::Status(command.status().code(),
                          absl::StrCat(SideLabel(side), ": ", command.status().message()));
    }
    // The router is rendered against the sides' ports (every DP rank's), as
    // at launch.
    std::vector<int> extra_ports;
    for (const RankCommand& rank : command->extra_ranks) extra_ports.push_back(rank.port);
    if (side == v1::SIDE_PREFILL) {
      endpoints.prefill_port = command->port;
      endpoints.prefill_extra_ports = extra_ports;
    }
    if (side == v1::SIDE_DECODE) {
      endpoints.decode_port = command->port;
      endpoints.decode_extra_ports = extra_ports;
    }
    commands.push_back(*std::move(command));
  }
  return commands;
}

std::vector<v1::RenderedCommand> RenderForPlan(InstanceDriver& instances,
                                               const v1::ExperimentSpec& spec,
                                               const std::string& log_dir) {
  std::vector<v1::RenderedCommand> out;
  v1::Side failed = v1::SIDE_UNSPECIFIED;
  absl::StatusOr<std::vector<LaunchCommand>> commands =
      RenderDeployment(instances, spec, log_dir, &failed);
  if (!commands.ok()) {
    v1::RenderedCommand& c = out.emplace_back();
    c.set_side(failed);
    c.set_error(std::string(commands.status().message()));
    return out;
  }
  for (const LaunchCommand& command : *commands) {
    v1::RenderedCommand& c = out.emplace_back();
    c.set_side(command.side);
    c.set_text(CommandToText(command));
  }
  return out;
}

absl::StatusOr<Counters> Preflight(StageEnv& env, const v1::Experiment& e) {
  // Same freeze as at submit: every referenced file must still hash to what
  // the spec recorded, or the launch would load something else.
  absl::StatusOr<spec::FrozenSpec> refrozen = spec::Freeze(e.spec(), "");
  if (!refrozen.ok()) return absl::FailedPreconditionError(refrozen.status().message());
  if (refrozen->sha256 != e.spec_sha256()) {
    return absl::FailedPreconditionError("the frozen spec no longer hashes to spec_sha256");
  }
  // Render every command with the code Launch uses.
  Counters counters;
  v1::Side failed = v1::SIDE_UNSPECIFIED;
  absl::StatusOr<std::vector<LaunchCommand>> commands =
      RenderDeployment(env.instances, e.spec(), env.log_dir, &failed);
  if (!commands.ok()) return commands.status();
  for (const LaunchCommand& command : *commands) {
    if (command.argv.empty() || access(command.argv[0].c_str(), X_OK) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          SideLabel(command.side), ": launch command \"",
          command.argv.empty() ? "" : command.argv[0], "\" is not an executable file"));
    }
    SERVELAB_RETURN_IF_ERROR(MissingPassedEnv(command));
    counters[absl::StrCat(SideLabel(command.side), "_processes")] = 1 + command.extra_ranks.size();
  }
  const v1::ExperimentSpec& spec = e.spec();
  for (v1::Phase phase : {v1::PHASE_WARMUP, v1::PHASE_CACHE_SEED, v1::PHASE_FORMAL}) {
    LoadJob job{.spec = &spec, .phase = phase, .experiment_id = e.id()};
    SERVELAB_ASSIGN_OR_RETURN(LoadPlanSummary plan, env.load.Plan(job));
    if (phase != v1::PHASE_FORMAL) continue;
    counters["planned_requests"] = static_cast<double>(plan.requests);
    counters["arrival_span_seconds"] = absl::ToDoubleSeconds(plan.arrival_span);
    const absl::Duration deadline = FromDuration(spec.limits().formal_deadline());
    if (plan.arrival_span >= deadline) {
      return absl::FailedPreconditionError(
          absl::StrCat("limits.formal_deadline: ", absl::FormatDuration(deadline),
                       " cannot hold the planned load: its last request is scheduled at ",
                       absl::FormatDuration(plan.arrival_span)));
    }
    for (const auto* side : {&spec.deployment().prefill(), &spec.deployment().decode()}) {
      if (plan.max_request_tokens > side->max_model_len()) {
        return absl::FailedPreconditionError(
            absl::StrCat("workload.dataset: a request of ", plan.max_request_tokens,
                         " tokens exceeds max_model_len ", side->max_model_len()));
      }
    }
  }
  return counters;
}

namespace {

void SetTallies(v1::Progress& progress, int64_t sent, int64_t completed, int64_t failed) {
  progress.set_formal_requests_sent(sent);
  progress.set_formal_requests_completed(completed);
  progress.set_formal_requests_failed(failed);
}

// When the batch's first request left, from the records' own clock (not
// from when the batch arrived); nullopt when none was sent.
std::optional<absl::Time> EarliestSend(const std::vector<v1::RequestRecord>& records) {
  std::optional<absl::Time> first;
  for (const v1::RequestRecord& r : records) {
    if (r.sent_ns() <= 0 || !r.has_load_start()) continue;
    const absl::Time sent = FromTimestamp(r.load_start()) + absl::Nanoseconds(r.sent_ns());
    if (!first.has_value() || sent < *first) first = sent;
  }
  return first;
}

}  // namespace

namespace {

// The formal load's progress. The load reports from two threads at once
// (records from its writer, ticks from its watcher: load_driver.h), and each
// changes the progress and then reports it; the lock makes that one step.
struct SharedProgress {
  absl::Mutex mu;
  v1::Progress progress ABSL_GUARDED_BY(mu);
};

// Tallies over the runs of one formal attempt (workload.repeats).
struct FormalTotals {
  int64_t sent = 0;
  int64_t completed = 0;
  int64_t failed = 0;
};

// Before every run after the first: the previous run drained, and the cache
// is back in the state the scenario measures from (reset, then seeded).
absl::Status PrepareRepeat(StageEnv& env, const v1::Experiment& e, int repeat) {
  if (absl::StatusOr<Counters> drained = DrainConfirm(env, e); !drained.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", repeat - 1, " of the formal load has not drained: ", drained.status().message()));
  }
  SERVELAB_RETURN_IF_ERROR(CacheReset(env, e).status());
  for (const v1::Stage& stage : e.stages()) {
    if (stage.name() == v1::STAGE_CACHE_SEED && stage.action() == v1::STAGE_ACTION_RUN) {
      return CacheSeed(env, e).status();
    }
  }
  return absl::OkStatus();
}

// One run of the formal load; its records carry `repeat`.
absl::StatusOr<LoadOutcome> RunFormalRepeat(StageEnv& env, const v1::Experiment& e, int attempt,
                                            int repeat, const v1::ServingInstance& router,
                                            SharedProgress& shared, const FormalTotals& before,
                                            const ProgressFn& on_progress) {
  const absl::Duration deadline = FromDuration(e.spec().limits().formal_deadline());
  const bool several = e.spec().workload().repeats() > 1;
  LoadJob job{.spec = &e.spec(),
              .phase = v1::PHASE_FORMAL,
              .experiment_id = e.id(),
              .attempt = attempt,
              .url = env.instances.BaseUrl(router),
              .load_tag = absl::StrCat(e.id(), "/formal/", attempt,
                                       several ? absl::StrCat("/", repeat) : ""),
              .deadline = env.clock.Now() + deadline};
  auto on_records = [&](const std::vector<v1::RequestRecord>& records) -> absl::Status {
    std::vector<v1::RequestRecord> stamped = records;
    for (v1::RequestRecord& r : stamped) r.set_repeat(repeat);
    // The raw data the result is computed from: on the disk, batch by batch.
    SERVELAB_RETURN_IF_ERROR(env.store.AppendRequests(stamped, Durability::kSynced));
    CrashPoint("records.batch.after");
    std::optional<absl::Time> first_sent = EarliestSend(records);
    absl::MutexLock lock(&shared.mu);
    v1::Progress& progress = shared.progress;
    if (first_sent.has_value() && !progress.has_first_formal_request_at()) {
      *progress.mutable_first_formal_request_at() = ToTimestamp(*first_sent);
      *progress.mutable_first_formal_request_delay() = TimeUtil::NanosecondsToDuration(
          absl::ToInt64Nanoseconds(*first_sent - FromTimestamp(e.submitted_at())));
      env.metrics.ObserveTimeToFirstFormalRequest(
          absl::ToDoubleSeconds(*first_sent - FromTimestamp(e.submitted_at())));
      on_progress(progress, false);
    }
    return absl::OkStatus();
  };
  auto on_tick = [&](const LoadTick& tick) {
    absl::MutexLock lock(&shared.mu);
    SetTallies(shared.progress, before.sent + tick.sent, before.completed + tick.completed,
               before.failed + tick.failed);
    on_progress(shared.progress, false);
  };
  SERVELAB_ASSIGN_OR_RETURN(LoadOutcome outcome,
                            env.load.Run(job, on_records, on_tick, env.cancel));
  env.metrics.CountFormalRequests("sent", outcome.sent);
  env.metrics.CountFormalRequests("completed", outcome.completed);
  env.metrics.CountFormalRequests("failed", outcome.failed);
  if (outcome.not_sent > 0 && !env.cancel.load()) {
    return absl::DeadlineExceededError(
        absl::StrCat("limits.formal_deadline (", absl::FormatDuration(deadline),
                     ") reached: ", outcome.sent, " of ", outcome.planned, " formal requests sent",
                     several ? " in run " : "", several ? absl::StrCat(repeat) : ""));
  }
  return outcome;
}

}  // namespace

DrainCheck CheckDrained(StageEnv& env, const v1::Experiment& e) {
  DrainCheck check;
  check.confirmed = DrainConfirm(env, e, &check.prefill_idle);
  return check;
}

absl::StatusOr<Counters> FormalLoad(StageEnv& env, const v1::Experiment& e, int attempt,
                                    const ProgressFn& on_progress, DrainCheck drained) {
  if (!drained.confirmed.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("an earlier load has not drained: ", drained.confirmed.status().message()));
  }
  std::optional<v1::ServingInstance> router = InstanceFor(env.store, v1::SIDE_ROUTER);
  std::optional<v1::ServingInstance> prefill = InstanceFor(env.store, v1::SIDE_PREFILL);
  if (!router.has_value() || !prefill.has_value()) {
    return absl::FailedPreconditionError("no deployment running");
  }
  const InstanceCounters before = drained.prefill_idle.value_or(InstanceCounters{});

  const int repeats = std::max(1, e.spec().workload().repeats());
  SharedProgress shared;
  {
    absl::MutexLock lock(&shared.mu);
    shared.progress = e.progress();
    SetTallies(shared.progress, 0, 0, 0);
  }
  FormalTotals totals;
  Counters counters{{"attempt", attempt}, {"repeats", repeats}};
  absl::Status failed;
  for (int repeat = 1; repeat <= repeats && failed.ok() && !env.cancel.load(); ++repeat) {
    if (repeat > 1) failed = PrepareRepeat(env, e, repeat);
    if (!failed.ok()) break;
    absl::StatusOr<LoadOutcome> outcome =
        RunFormalRepeat(env, e, attempt, repeat, *router, shared, totals, on_progress);
    if (!outcome.ok()) {
      failed = outcome.status();
      break;
    }
    totals = {totals.sent + outcome->sent, totals.completed + outcome->completed,
              totals.failed + outcome->failed};
    counters[repeats > 1 ? absl::StrCat("run_", repeat, "_wall_seconds") : "wall_seconds"] =
        absl::ToDoubleSeconds(outcome->wall);
    double& read_lag = counters["client_read_lag_p99_seconds"];  // The worst run's.
    read_lag = std::max(read_lag, absl::ToDoubleSeconds(outcome->first_token_read_lag_p99));
  }
  {
    absl::MutexLock lock(&shared.mu);
    SetTallies(shared.progress, totals.sent, totals.completed, totals.failed);
    on_progress(shared.progress, true);
  }
  counters["sent"] = static_cast<double>(totals.sent);
  counters["completed"] = static_cast<double>(totals.completed);
  counters["failed"] = static_cast<double>(totals.failed);
  if (absl::StatusOr<InstanceCounters> after = env.instances.Scrape(*prefill); after.ok()) {
    const double queries = after->prefix_cache_queries - before.prefix_cache_queries;
    if (queries > 0) {
      counters["achieved_hit_ratio"] =
          (after->prefix_cache_hits - before.prefix_cache_hits) / queries;
    }
  }
  if (env.cancel.load()) return absl::CancelledError("cancelled during the formal load");
  // An instance that died under the load cut it short, whatever the load
  // generator saw (failed requests, or none yet): the load is interrupted,
  // not finished, and resume relaunches the dead side (docs/design.md §7).
  SERVELAB_ASSIGN_OR_RETURN(std::vector<std::string> gone, GoneInstances(env));
  if (!gone.empty()) {
    return absl::UnavailableError(absl::StrCat(
        absl::StrJoin(gone, ", "), " exited during the formal load (", totals.failed, " of ",
        totals.sent, " sent requests failed); resume relaunches it for a new attempt"));
  }
  if (!failed.ok()) return failed;
  return counters;
}

absl::StatusOr<Counters> DrainConfirm(StageEnv& env, const v1::Experiment& e,
                                      std::optional<InstanceCounters>* prefill_idle) {
  const absl::Time deadline = env.clock.Now() + FromDuration(e.spec().limits().drain_timeout());
  int polls = 0;
  while (true) {
    ++polls;
    SERVELAB_ASSIGN_OR_RETURN(std::vector<Scraped> scraped, ScrapeQueues(env));
    std::vector<std::string> busy = BusyInstances(env, scraped);
    if (busy.empty()) {
      for (const Scraped& s : scraped) {
        if (prefill_idle != nullptr && s.instance.side() == v1::SIDE_PREFILL && s.counters.ok()) {
          *prefill_idle = *s.counters;
        }
      }
      return Counters{{"polls", polls}};
    }
    if (env.clock.Now() >= deadline) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot confirm the load ended: ", absl::StrJoin(busy, "; ")));
    }
    env.clock.SleepFor(env.drain_poll);
  }
}

namespace {

// At most this long is spent resetting the caches ahead; past it the next
// experiment's cache_reset does the whole reset itself.
constexpr absl::Duration kResetAheadBudget = absl::Seconds(5);

}  // namespace

absl::StatusOr<Counters> DrainConfirmStage(StageEnv& env, const v1::Experiment& e) {
  SERVELAB_ASSIGN_OR_RETURN(Counters counters, DrainConfirm(env, e));
  if (env.empty_caches == nullptr) return counters;
  const absl::Time start = env.clock.Now();
  absl::StatusOr<EmptyCaches> reset = ResetCachesAhead(env, e, kResetAheadBudget);
  *env.empty_caches = reset.ok() ? std::optional<EmptyCaches>(*reset) : std::nullopt;
  counters["caches_reset_ahead"] = reset.ok() ? 1 : 0;
  counters["reset_ahead_seconds"] = absl::ToDoubleSeconds(env.clock.Now() - start);
  counters["prefill_cache_check_requests"] = reset.ok() ? reset->prefill_check_requests : 0;
  counters["decode_cache_check_requests"] = reset.ok() ? reset->decode_check_requests : 0;
  return counters;
}

}  // namespace servelab::core
