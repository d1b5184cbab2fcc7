// Stages that change or check the serving deployment: launch, warmup, route
// verification and prefix-cache preparation.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/crash_points.h"
#include "common/labels.h"
#include "common/status_macros.h"
#include "daemon/core/at_once.h"
#include "daemon/core/hot_deployment.h"
#include "daemon/core/launch_command_text.h"
#include "daemon/core/ledger.h"
#include "daemon/core/planner.h"
#include "daemon/core/stages.h"

namespace servelab::core {
namespace {

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
  SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance router,
                            RequireInstance(env.store, v1::SIDE_ROUTER));
  SERVELAB_ASSIGN_OR_RETURN(int attempt, NextAttempt(env.store, e.id(), phase));
  LoadJob job{.spec = &e.spec(),
              .phase = phase,
              .experiment_id = e.id(),
              .attempt = attempt,
              .url = env.instances.BaseUrl(router),
              .load_tag = absl::StrCat(e.id(), "/", PhaseLabel(phase), "/", attempt),
              .warmup_round = round,
              .deadline = env.clock.Now() + timeout};
  return env.load.Run(
      job,
      [&](const std::vector<v1::RequestRecord>& records) {
        // Records of a load that prepares, not of the measured one: they
        // reach the disk with the formal load's first write (store.h).
        return env.store.AppendRequests(records, Durability::kOrdered);
      },
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
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::RequestRecord> records,
                            store.ListRequests(id, phase, 0));
  int attempt = 0;
  for (const v1::RequestRecord& r : records) attempt = std::max(attempt, r.attempt());
  return attempt + 1;
}

namespace {

// A Slurm step's identity as numbers: "42.3" is slurm_job 42, slurm_step 3
// (the stage's counters are numeric; the events and status name it whole).
void AddStepCounters(const v1::PlacedProcess& placed, Counters& counters) {
  if (placed.kind() != v1::PLACEMENT_KIND_SLURM) return;
  std::pair<std::string, std::string> ids = absl::StrSplit(placed.step_id(), '.');
  double job = 0, step = 0;
  if (absl::SimpleAtod(ids.first, &job) && absl::SimpleAtod(ids.second, &step)) {
    counters["slurm_job"] = job;
    counters["slurm_step"] = step;
  }
}

}  // namespace

absl::StatusOr<Counters> LaunchSide(StageEnv& env, const v1::Experiment& e, v1::Side side) {
  const absl::Time start = env.clock.Now();
  // The instance this side replaces goes first: one owner per accelerator.
  if (std::optional<v1::ServingInstance> old = InstanceFor(env.store, side); old.has_value()) {
    SERVELAB_RETURN_IF_ERROR(env.instances.Stop(*old, env.stop_grace));
    SERVELAB_RETURN_IF_ERROR(env.store.RemoveInstance(side));
  }
  Endpoints endpoints = NodeEndpoints(e.spec());
  if (side == v1::SIDE_ROUTER) {
    SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance prefill,
                              RequireInstance(env.store, v1::SIDE_PREFILL));
    SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance decode,
                              RequireInstance(env.store, v1::SIDE_DECODE));
    endpoints.prefill_port = prefill.port();
    endpoints.decode_port = decode.port();
    // Under Slurm placement, the node each side runs on.
    if (!prefill.placed().host().empty()) endpoints.prefill_host = prefill.placed().host();
    if (!decode.placed().host().empty()) endpoints.decode_host = decode.placed().host();
    for (const v1::RankProcess& r : prefill.extra_ranks())
      endpoints.prefill_extra_ports.push_back(r.port());
    for (const v1::RankProcess& r : decode.extra_ranks())
      endpoints.decode_extra_ports.push_back(r.port());
  }
  SERVELAB_ASSIGN_OR_RETURN(LaunchCommand command,
                            env.instances.Render(e.spec(), side, endpoints, env.log_dir));
  SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance instance, env.instances.Launch(command));
  CrashPoint("instance.launch.after_spawn");  // Running, not yet recorded: an orphan.
  instance.set_fingerprint(FingerprintOf(e.plan().fingerprints(), side));
  instance.set_experiment_id(e.id());
  instance.set_command_text(CommandToText(command));
  *instance.mutable_launched_at() = ToTimestamp(env.clock.Now());
  // Stored before it is ready, so that a daemon crash now still knows the
  // process exists and can stop or adopt it.
  SERVELAB_RETURN_IF_ERROR(env.store.PutInstance(instance));
  CrashPoint("instance.launch.after_record");
  env.metrics.CountInstanceLaunch(SideLabel(side));
  SERVELAB_RETURN_IF_ERROR(env.instances.WaitReady(
      instance, env.clock.Now() + FromDuration(e.spec().limits().launch_timeout())));
  Counters counters{{"pid", instance.pid()},
                    {"port", instance.port()},
                    {"ready_seconds", absl::ToDoubleSeconds(env.clock.Now() - start)}};
  for (const v1::RankProcess& rank : instance.extra_ranks()) {
    counters[absl::StrCat("rank", rank.dp_rank(), "_pid")] = rank.pid();
  }
  AddStepCounters(instance.placed(), counters);
  return counters;
}

absl::StatusOr<Counters> Warmup(StageEnv& env, const v1::Experiment& e) {
  const v1::WarmupSpec& warmup = e.spec().deployment().warmup();
  Counters counters;
  double requests = 0;
  for (int round = 0; round < warmup.rounds(); ++round) {
    SERVELAB_ASSIGN_OR_RETURN(LoadOutcome outcome,
                              RunAuxiliaryLoad(env, e, v1::PHASE_WARMUP, round,
                                               FromDuration(e.spec().limits().warmup_timeout())));
    SERVELAB_RETURN_IF_ERROR(
        RequireAllCompleted(outcome, absl::StrCat("warmup round ", round + 1)));
    requests += outcome.completed;
    counters[absl::StrCat("round_", round + 1, "_wall_seconds")] =
        absl::ToDoubleSeconds(outcome.wall);
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

namespace {

// What one request through the router moved on each side.
struct RouteDeltas {
  double prefill_requests = 0;
  double decode_requests = 0;
  double prefill_tokens = 0;
  double decode_tokens = 0;
  bool BothMoved() const {
    return prefill_requests > 0 && decode_requests > 0 && prefill_tokens > 0 && decode_tokens > 0;
  }
};

// The client has the last chunk before a server counts the request done
// (the sim, like vLLM and SGLang, bumps request_success after writing the
// stream's end), so the counters are read again for a short while before
// the route is declared broken.
absl::StatusOr<RouteDeltas> SettledDeltas(StageEnv& env, const v1::ServingInstance& prefill,
                                          const v1::ServingInstance& decode,
                                          const InstanceCounters& p0, const InstanceCounters& d0) {
  constexpr absl::Duration kSettle = absl::Seconds(2);
  const absl::Time give_up = env.clock.Now() + kSettle;
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(InstanceCounters p1, env.instances.Scrape(prefill));
    SERVELAB_ASSIGN_OR_RETURN(InstanceCounters d1, env.instances.Scrape(decode));
    RouteDeltas deltas{.prefill_requests = p1.request_success - p0.request_success,
                       .decode_requests = d1.request_success - d0.request_success,
                       .prefill_tokens = p1.prompt_tokens - p0.prompt_tokens,
                       .decode_tokens = d1.generation_tokens - d0.generation_tokens};
    if (deltas.BothMoved() || env.clock.Now() >= give_up) return deltas;
    env.clock.SleepFor(absl::Milliseconds(20));
  }
}

}  // namespace

absl::StatusOr<Counters> RouteVerify(StageEnv& env, const v1::Experiment& e) {
  SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance prefill,
                            RequireInstance(env.store, v1::SIDE_PREFILL));
  SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance decode,
                            RequireInstance(env.store, v1::SIDE_DECODE));
  SERVELAB_ASSIGN_OR_RETURN(InstanceCounters p0, env.instances.Scrape(prefill));
  SERVELAB_ASSIGN_OR_RETURN(InstanceCounters d0, env.instances.Scrape(decode));
  SERVELAB_ASSIGN_OR_RETURN(LoadOutcome outcome,
                            RunAuxiliaryLoad(env, e, v1::PHASE_ROUTE_VERIFY, 0,
                                             FromDuration(e.spec().limits().warmup_timeout())));
  SERVELAB_RETURN_IF_ERROR(RequireAllCompleted(outcome, "route check"));
  // One request through the router must show up in both sides' own
  // counters: a router that silently serves from one side would pass any
  // latency check. Counters, not headers: real proxies replace x-request-id
  // and drop the rest (vLLM's toy_proxy_server.py), so nothing the client
  // sends is seen by P or D except the body (docs/design.md §9).
  SERVELAB_ASSIGN_OR_RETURN(RouteDeltas d, SettledDeltas(env, prefill, decode, p0, d0));
  if (!d.BothMoved()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "route check: a request through the router moved prefill by ", d.prefill_requests,
        " requests / ", d.prefill_tokens, " prompt tokens and decode by ", d.decode_requests,
        " requests / ", d.decode_tokens, " generation tokens; both sides must move"));
  }
  return Counters{{"prefill_requests_delta", d.prefill_requests},
                  {"decode_requests_delta", d.decode_requests},
                  {"prefill_prompt_tokens_delta", d.prefill_tokens},
                  {"decode_generation_tokens_delta", d.decode_tokens}};
}

namespace {

// Long enough to fill several KV blocks (the prefix cache only holds whole
// blocks), and unlike any dataset prompt.
std::string CacheCheckPrompt(const std::string& experiment_id) {
  std::string prompt;
  for (int i = 0; i < 24; ++i)
    absl::StrAppend(&prompt, "servelab cache check ", experiment_id, " ");
  return prompt;
}

// Waits until the instance holds no request and no KV block.
absl::Status WaitIdle(StageEnv& env, const v1::ServingInstance& instance, absl::Time deadline) {
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(InstanceCounters c, env.instances.Scrape(instance));
    if (!c.HoldsRequests() && c.kv_cache_usage == 0) return absl::OkStatus();
    if (env.clock.Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          SideLabel(instance.side()), " never went idle for the cache reset: ", c.requests_running,
          " running, ", c.requests_waiting, " waiting, ", c.requests_in_transfer,
          " in transfer, KV usage ", c.kv_cache_usage));
    }
    env.clock.SleepFor(env.drain_poll);
  }
}

// A reset that is confirmed, not just answered: vLLM's /reset_prefix_cache
// answers 200 even when it refused (blocks still held, e.g. by NIXL leases),
// and SGLang's /flush_cache answers 400 while requests run. So: wait for
// the instance to be idle, reset, and (where the answer proves nothing)
// send a check prompt that was cached before the reset and check it no
// longer hits. Retried until `deadline`.
struct ResetOutcome {
  int attempts = 0;
  int cache_check_requests = 0;
};

absl::StatusOr<ResetOutcome> ConfirmedReset(StageEnv& env, const v1::ServingInstance& instance,
                                            const std::string& check_prompt, absl::Time deadline) {
  const bool confirm = env.instances.ResetNeedsConfirmation(instance);
  ResetOutcome outcome;
  // Cache the check prompt first, so that a refused reset shows up as a hit.
  if (confirm) {
    SERVELAB_RETURN_IF_ERROR(env.instances.SendCacheCheckRequest(instance, check_prompt));
    ++outcome.cache_check_requests;
  }
  std::string last = "no attempt";
  for (int& attempt = outcome.attempts;;) {
    ++attempt;
    SERVELAB_RETURN_IF_ERROR(WaitIdle(env, instance, deadline));
    absl::Status reset = env.instances.ResetPrefixCache(instance);
    if (!reset.ok() && !absl::IsUnavailable(reset)) return reset;
    if (reset.ok() && !confirm) return outcome;
    if (reset.ok()) {
      SERVELAB_ASSIGN_OR_RETURN(InstanceCounters before, env.instances.Scrape(instance));
      SERVELAB_RETURN_IF_ERROR(env.instances.SendCacheCheckRequest(instance, check_prompt));
      ++outcome.cache_check_requests;
      SERVELAB_ASSIGN_OR_RETURN(InstanceCounters after, env.instances.Scrape(instance));
      const double hits = after.prefix_cache_hits - before.prefix_cache_hits;
      if (hits == 0) return outcome;
      last = absl::StrCat("the reset answered OK but the cached check prompt still hit ", hits,
                          " tokens (the engine refused it)");
    } else {
      last = std::string(reset.message());
    }
    if (env.clock.Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(SideLabel(instance.side()), " prefix cache not reset after ", attempt,
                       " attempts by limits.warmup_timeout: ", last));
    }
    env.clock.SleepFor(env.drain_poll);
  }
}

// `fn` for prefill and decode at the same time (the sides are independent,
// so a step costs the slower side, not the sum): {prefill's, decode's}.
template <typename Fn>
auto OnBothSides(const v1::ServingInstance& prefill, const v1::ServingInstance& decode, Fn fn) {
  auto results = AtOnce(std::vector{prefill, decode}, fn);
  return std::make_pair(std::move(results[0]), std::move(results[1]));
}

struct BothSides {
  v1::ServingInstance prefill, decode;
};

absl::StatusOr<BothSides> RequireBothSides(Store& store) {
  BothSides sides;
  SERVELAB_ASSIGN_OR_RETURN(sides.prefill, RequireInstance(store, v1::SIDE_PREFILL));
  SERVELAB_ASSIGN_OR_RETURN(sides.decode, RequireInstance(store, v1::SIDE_DECODE));
  return sides;
}

// Both sides reset and confirmed by `deadline`.
absl::StatusOr<std::pair<ResetOutcome, ResetOutcome>> ResetBothSides(
    StageEnv& env, const BothSides& sides, const std::string& check_prompt, absl::Time deadline) {
  auto [prefill, decode] = OnBothSides(sides.prefill, sides.decode, [&](const auto& instance) {
    return ConfirmedReset(env, instance, check_prompt, deadline);
  });
  SERVELAB_RETURN_IF_ERROR(prefill.status());
  SERVELAB_RETURN_IF_ERROR(decode.status());
  return std::make_pair(*prefill, *decode);
}

bool SameProcess(const v1::ServingInstance& a, const v1::ServingInstance& b) {
  return a.pid() == b.pid() && a.process_start_ticks() == b.process_start_ticks() &&
         a.port() == b.port() && a.extra_ranks_size() == b.extra_ranks_size();
}

// Nothing has reached the instance since `then`: idle, no KV block in use,
// and not one more request or token counted.
bool Untouched(const InstanceCounters& then, const InstanceCounters& now) {
  return !now.HoldsRequests() && now.kv_cache_usage == 0 &&
         now.request_success == then.request_success && now.prompt_tokens == then.prompt_tokens &&
         now.generation_tokens == then.generation_tokens &&
         now.prefix_cache_queries == then.prefix_cache_queries &&
         now.prefix_cache_hits == then.prefix_cache_hits;
}

// Whether the caches `carried` records as reset still are: the same
// processes, untouched since. One scrape per side, at the same time.
// Prefill's counters when they are; nullopt when not.
std::optional<InstanceCounters> StillEmpty(StageEnv& env, const EmptyCaches& carried,
                                           const BothSides& sides) {
  if (!SameProcess(carried.prefill, sides.prefill) || !SameProcess(carried.decode, sides.decode)) {
    return std::nullopt;
  }
  auto [prefill, decode] = OnBothSides(sides.prefill, sides.decode, [&](const auto& instance) {
    return env.instances.Scrape(instance);
  });
  if (!prefill.ok() || !decode.ok() || !Untouched(carried.prefill_counters, *prefill) ||
      !Untouched(carried.decode_counters, *decode)) {
    return std::nullopt;
  }
  return *prefill;
}

// Where `e`'s cache seed starts counting prefill's hits: what its
// cache_reset saw, when that is still prefill's state (the same experiment
// and process, nothing sent in between); a scrape otherwise.
absl::StatusOr<InstanceCounters> SeedStartCounters(StageEnv& env, const v1::Experiment& e,
                                                   const v1::ServingInstance& prefill) {
  std::optional<SeedStart> start;
  if (env.seed_start != nullptr) std::swap(start, *env.seed_start);
  if (start.has_value() && start->experiment_id == e.id() && SameProcess(start->prefill, prefill)) {
    return start->counters;
  }
  return env.instances.Scrape(prefill);
}

}  // namespace

absl::StatusOr<Counters> CacheReset(StageEnv& env, const v1::Experiment& e) {
  const absl::Time deadline = env.clock.Now() + FromDuration(e.spec().limits().warmup_timeout());
  SERVELAB_ASSIGN_OR_RETURN(BothSides sides, RequireBothSides(env.store));
  // A record of caches reset ahead is used once, whatever it shows.
  std::optional<EmptyCaches> carried;
  if (env.empty_caches != nullptr) std::swap(carried, *env.empty_caches);
  if (env.seed_start != nullptr) env.seed_start->reset();
  std::optional<InstanceCounters> prefill;
  if (carried.has_value()) prefill = StillEmpty(env, *carried, sides);
  if (prefill.has_value()) {
    if (env.seed_start != nullptr) *env.seed_start = SeedStart{e.id(), sides.prefill, *prefill};
    return Counters{{"reset_ahead", 1},
                    {"prefill_reset_attempts", 0},
                    {"prefill_cache_check_requests", 0},
                    {"decode_reset_attempts", 0},
                    {"decode_cache_check_requests", 0}};
  }
  SERVELAB_ASSIGN_OR_RETURN(auto outcomes,
                            ResetBothSides(env, sides, CacheCheckPrompt(e.id()), deadline));
  return Counters{{"reset_ahead", 0},
                  {"prefill_reset_attempts", outcomes.first.attempts},
                  {"prefill_cache_check_requests", outcomes.first.cache_check_requests},
                  {"decode_reset_attempts", outcomes.second.attempts},
                  {"decode_cache_check_requests", outcomes.second.cache_check_requests}};
}

absl::StatusOr<EmptyCaches> ResetCachesAhead(StageEnv& env, const v1::Experiment& e,
                                             absl::Duration budget) {
  const absl::Time deadline =
      env.clock.Now() + std::min(budget, FromDuration(e.spec().limits().warmup_timeout()));
  SERVELAB_ASSIGN_OR_RETURN(BothSides sides, RequireBothSides(env.store));
  SERVELAB_ASSIGN_OR_RETURN(
      auto outcomes,
      ResetBothSides(env, sides, CacheCheckPrompt(absl::StrCat(e.id(), "-next")), deadline));
  auto [prefill, decode] = OnBothSides(sides.prefill, sides.decode, [&](const auto& instance) {
    return env.instances.Scrape(instance);
  });
  SERVELAB_RETURN_IF_ERROR(prefill.status());
  SERVELAB_RETURN_IF_ERROR(decode.status());
  return EmptyCaches{.prefill = sides.prefill,
                     .decode = sides.decode,
                     .prefill_counters = *prefill,
                     .decode_counters = *decode,
                     .prefill_check_requests = outcomes.first.cache_check_requests,
                     .decode_check_requests = outcomes.second.cache_check_requests};
}

absl::StatusOr<Counters> CacheSeed(StageEnv& env, const v1::Experiment& e) {
  SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance prefill,
                            RequireInstance(env.store, v1::SIDE_PREFILL));
  SERVELAB_ASSIGN_OR_RETURN(InstanceCounters before, SeedStartCounters(env, e, prefill));
  SERVELAB_ASSIGN_OR_RETURN(LoadOutcome outcome,
                            RunAuxiliaryLoad(env, e, v1::PHASE_CACHE_SEED, 0,
                                             FromDuration(e.spec().limits().warmup_timeout())));
  SERVELAB_RETURN_IF_ERROR(RequireAllCompleted(outcome, "cache seed"));
  SERVELAB_ASSIGN_OR_RETURN(InstanceCounters after, env.instances.Scrape(prefill));
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
