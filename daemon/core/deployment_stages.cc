// Stages that change or probe the serving deployment: launch, warmup, route
// verification and prefix-cache preparation.
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/core/hot_state.h"
#include "daemon/core/ledger.h"
#include "daemon/core/planner.h"
#include "daemon/core/stages.h"

namespace servelab::core {
namespace {

std::string SideLabel(v1::Side side) {
  switch (side) {
    case v1::SIDE_PREFILL: return "prefill";
    case v1::SIDE_DECODE: return "decode";
    case v1::SIDE_ROUTER: return "router";
    default: return "unknown";
  }
}

// "warmup" for PHASE_WARMUP: the middle part of a load tag (exp-3/warmup/1).
std::string PhaseLabel(v1::Phase phase) {
  return absl::AsciiStrToLower(v1::Phase_Name(phase).substr(std::string("PHASE_").size()));
}

absl::StatusOr<v1::ServingInstance> RequireInstance(Store& store, v1::Side side) {
  std::optional<v1::ServingInstance> instance = InstanceFor(store, side);
  if (!instance.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat("no ", SideLabel(side), " instance running"));
  }
  return *instance;
}

// Runs one auxiliary load through the router and stores its records.
absl::StatusOr<LoadOutcome> RunAuxiliaryLoad(StageEnv& env, const v1::Experiment& e,
                                             v1::Phase phase, int round, absl::Duration timeout) {
  SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance router, RequireInstance(env.store, v1::SIDE_ROUTER));
  SERVELAB_ASSIGN_OR_RETURN(int attempt, NextAttempt(env.store, e.id(), phase));
  LoadJob job{.spec = &e.spec(), .phase = phase, .experiment_id = e.id(), .attempt = attempt,
              .url = env.engine.BaseUrl(router),
              .load_tag = absl::StrCat(e.id(), "/", PhaseLabel(phase), "/", attempt),
              .warmup_round = round, .deadline = env.clock.Now() + timeout};
  return env.load.Run(
      job, [&](const std::vector<v1::RequestRecord>& records) { return env.store.AppendRequests(records); },
      [](const LoadTick&) {}, env.cancel);
}

absl::Status RequireAllCompleted(const LoadOutcome& outcome, const std::string& what) {
  if (outcome.completed == outcome.planned) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(what, ": ", outcome.completed, " of ", outcome.planned,
                                             " requests completed (", outcome.failed, " failed, ",
                                             outcome.not_sent, " not sent)"));
}

}  // namespace

std::optional<v1::ServingInstance> InstanceFor(Store& store, v1::Side side) {
  absl::StatusOr<std::vector<v1::ServingInstance>> instances = store.ListInstances();
  if (!instances.ok()) return std::nullopt;
  for (const v1::ServingInstance& instance : *instances) {
    if (instance.side() == side) return instance;
  }
  return std::nullopt;
}

absl::StatusOr<int> NextAttempt(Store& store, const std::string& id, v1::Phase phase) {
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::RequestRecord> records, store.ListRequests(id, phase, 0));
  int attempt = 0;
  for (const v1::RequestRecord& r : records) attempt = std::max(attempt, r.attempt());
  return attempt + 1;
}

absl::StatusOr<Counters> LaunchSide(StageEnv& env, const v1::Experiment& e, v1::Side side) {
  const absl::Time start = env.clock.Now();
  // The instance this side replaces goes first: one owner per accelerator.
  if (std::optional<v1::ServingInstance> old = InstanceFor(env.store, side); old.has_value()) {
    SERVELAB_RETURN_IF_ERROR(env.engine.Stop(*old, env.stop_grace));
    SERVELAB_RETURN_IF_ERROR(env.store.RemoveInstance(side));
  }
  Endpoints endpoints;
  if (side == v1::SIDE_ROUTER) {
    SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance prefill, RequireInstance(env.store, v1::SIDE_PREFILL));
    SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance decode, RequireInstance(env.store, v1::SIDE_DECODE));
    endpoints.prefill_port = prefill.port();
    endpoints.decode_port = decode.port();
  }
  SERVELAB_ASSIGN_OR_RETURN(LaunchCommand command,
                            env.engine.Render(e.spec(), side, endpoints, env.log_dir));
  SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance instance, env.engine.Launch(command));
  instance.set_fingerprint(FingerprintOf(e.plan().fingerprints(), side));
  instance.set_experiment_id(e.id());
  *instance.mutable_launched_at() = ToTimestamp(env.clock.Now());
  // Stored before it is ready, so that a daemon crash now still knows the
  // process exists and can stop or adopt it.
  SERVELAB_RETURN_IF_ERROR(env.store.PutInstance(instance));
  env.metrics.CountInstanceLaunch(SideLabel(side));
  SERVELAB_RETURN_IF_ERROR(env.engine.WaitReady(
      instance, env.clock.Now() + FromDuration(e.spec().limits().launch_timeout())));
  return Counters{{"pid", instance.pid()},
                  {"port", instance.port()},
                  {"ready_seconds", absl::ToDoubleSeconds(env.clock.Now() - start)}};
}

absl::StatusOr<Counters> Warmup(StageEnv& env, const v1::Experiment& e) {
  const v1::WarmupSpec& warmup = e.spec().deployment().warmup();
  Counters counters;
  double requests = 0;
  for (int round = 0; round < warmup.rounds(); ++round) {
    SERVELAB_ASSIGN_OR_RETURN(
        LoadOutcome outcome,
        RunAuxiliaryLoad(env, e, v1::PHASE_WARMUP, round,
                         FromDuration(e.spec().limits().warmup_timeout())));
    SERVELAB_RETURN_IF_ERROR(RequireAllCompleted(outcome, absl::StrCat("warmup round ", round + 1)));
    requests += outcome.completed;
    counters[absl::StrCat("round_", round + 1, "_wall_seconds")] = absl::ToDoubleSeconds(outcome.wall);
  }
  counters["requests"] = requests;
  // The deployment is warm from now on: a later experiment reuses it.
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::ServingInstance> instances, env.store.ListInstances());
  for (v1::ServingInstance& instance : instances) {
    *instance.mutable_warm_since() = ToTimestamp(env.clock.Now());
    SERVELAB_RETURN_IF_ERROR(env.store.PutInstance(instance));
  }
  return counters;
}

absl::StatusOr<Counters> RouteVerify(StageEnv& env, const v1::Experiment& e) {
  SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance prefill, RequireInstance(env.store, v1::SIDE_PREFILL));
  SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance decode, RequireInstance(env.store, v1::SIDE_DECODE));
  SERVELAB_ASSIGN_OR_RETURN(InstanceCounters p0, env.engine.Scrape(prefill));
  SERVELAB_ASSIGN_OR_RETURN(InstanceCounters d0, env.engine.Scrape(decode));
  SERVELAB_ASSIGN_OR_RETURN(
      LoadOutcome outcome,
      RunAuxiliaryLoad(env, e, v1::PHASE_PROBE, 0, FromDuration(e.spec().limits().warmup_timeout())));
  SERVELAB_RETURN_IF_ERROR(RequireAllCompleted(outcome, "route probe"));
  SERVELAB_ASSIGN_OR_RETURN(InstanceCounters p1, env.engine.Scrape(prefill));
  SERVELAB_ASSIGN_OR_RETURN(InstanceCounters d1, env.engine.Scrape(decode));
  // One request through the router must show up on both sides: a router
  // that silently serves from one side would pass any latency check.
  const double prefill_moved = p1.prompt_tokens - p0.prompt_tokens;
  const double decode_moved = d1.generation_tokens - d0.generation_tokens;
  if (prefill_moved <= 0 || decode_moved <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "route check: a probe through the router moved prefill prompt tokens by ", prefill_moved,
        " and decode generation tokens by ", decode_moved, "; both must move"));
  }
  return Counters{{"prefill_prompt_tokens_delta", prefill_moved},
                  {"decode_generation_tokens_delta", decode_moved}};
}

absl::StatusOr<Counters> CacheReset(StageEnv& env, const v1::Experiment& e) {
  for (v1::Side side : {v1::SIDE_PREFILL, v1::SIDE_DECODE}) {
    SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance instance, RequireInstance(env.store, side));
    SERVELAB_RETURN_IF_ERROR(env.engine.ResetPrefixCache(instance));
  }
  return Counters{};
}

absl::StatusOr<Counters> CacheSeed(StageEnv& env, const v1::Experiment& e) {
  SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance prefill, RequireInstance(env.store, v1::SIDE_PREFILL));
  SERVELAB_ASSIGN_OR_RETURN(InstanceCounters before, env.engine.Scrape(prefill));
  SERVELAB_ASSIGN_OR_RETURN(
      LoadOutcome outcome,
      RunAuxiliaryLoad(env, e, v1::PHASE_CACHE_SEED, 0, FromDuration(e.spec().limits().warmup_timeout())));
  SERVELAB_RETURN_IF_ERROR(RequireAllCompleted(outcome, "cache seed"));
  SERVELAB_ASSIGN_OR_RETURN(InstanceCounters after, env.engine.Scrape(prefill));
  const double queries = after.prefix_cache_queries - before.prefix_cache_queries;
  const double hits = after.prefix_cache_hits - before.prefix_cache_hits;
  // Wall time and summed latency are different facts: reporting only the
  // sum overstates what the user waited, only the wall hides the cost.
  return Counters{{"requests", static_cast<double>(outcome.completed)},
                  {"wall_seconds", absl::ToDoubleSeconds(outcome.wall)},
                  {"summed_request_latency_seconds", absl::ToDoubleSeconds(outcome.summed_latency)},
                  {"seed_hit_ratio", queries > 0 ? hits / queries : 0}};
}

}  // namespace servelab::core
