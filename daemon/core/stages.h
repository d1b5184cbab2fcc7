// The bodies of the stages, one function each, called by the stage runner
// between its persisted RUNNING and SUCCEEDED/FAILED transitions. Each reads
// every parameter from the experiment's frozen spec and returns the stage's
// counters (or the error that fails it).
//
// deployment_stages.cc: launch_*, warmup, route_verify, cache_reset, cache_seed.
// load_stages.cc:       preflight, formal_load, drain_confirm.
// analysis_stages.cc:   analyze, decide.
#ifndef SERVELAB_DAEMON_CORE_STAGES_H_
#define SERVELAB_DAEMON_CORE_STAGES_H_

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/core/baseline_index.h"
#include "daemon/core/clock.h"
#include "daemon/core/instance_driver.h"
#include "daemon/core/load_driver.h"
#include "daemon/core/runner_metrics.h"
#include "daemon/core/store.h"
#include "servelab/v1/experiment.pb.h"

namespace servelab::core {

using Counters = std::map<std::string, double>;

// Both prefix caches as the lane left them after a drained formal load:
// reset then (and confirmed), with each side's counters just after. The next
// cache_reset only has to see the same processes with the same counters to
// know nothing has touched the caches since (docs/design.md §9).
struct EmptyCaches {
  v1::ServingInstance prefill, decode;
  InstanceCounters prefill_counters, decode_counters;
  // The reset's cache-check requests, per side (the stage reports them).
  int prefill_check_requests = 0, decode_check_requests = 0;
};

// Prefill's counters as cache_reset found them, untouched since the caches
// were reset ahead: where the cache_seed right after starts counting its
// hits, without a scrape of its own (docs/design.md §9).
struct SeedStart {
  std::string experiment_id;
  v1::ServingInstance prefill;
  InstanceCounters counters;
};

// What a stage may use. Borrowed; outlives the stage.
struct StageEnv {
  Store& store;
  BaselineIndex& baselines;
  InstanceDriver& instances;
  LoadDriver& load;
  RunnerMetrics& metrics;
  Clock& clock;
  std::string log_dir;
  std::atomic<bool>& cancel;
  absl::Duration stop_grace;
  absl::Duration drain_poll;
  // The lane's record of caches already reset; null: never reset ahead.
  // Only the lane thread uses it.
  std::optional<EmptyCaches>* empty_caches = nullptr;
  // Left by cache_reset for its experiment's cache_seed; null: none kept.
  // Only the lane thread uses it.
  std::optional<SeedStart>* seed_start = nullptr;
};

// Each side's address as far as the spec knows it before launch: loopback,
// or the side's node under Slurm placement (an engine that advertises its
// own address, such as vLLM's NIXL side channel, needs it).
Endpoints NodeEndpoints(const v1::ExperimentSpec& spec);

// Renders prefill, decode and router (against the sides' ports) with the
// code Launch uses. On error `failed_side` names the side that failed.
absl::StatusOr<std::vector<LaunchCommand>> RenderDeployment(InstanceDriver& instances,
                                                            const v1::ExperimentSpec& spec,
                                                            const std::string& log_dir,
                                                            v1::Side* failed_side);
// The same, as `servelab plan` shows it: one entry per side rendered, or
// one entry with the error of the first side that cannot be.
std::vector<v1::RenderedCommand> RenderForPlan(InstanceDriver& instances,
                                               const v1::ExperimentSpec& spec,
                                               const std::string& log_dir);

absl::StatusOr<Counters> Preflight(StageEnv& env, const v1::Experiment& e);
absl::StatusOr<Counters> LaunchSide(StageEnv& env, const v1::Experiment& e, v1::Side side);
absl::StatusOr<Counters> Warmup(StageEnv& env, const v1::Experiment& e);
absl::StatusOr<Counters> RouteVerify(StageEnv& env, const v1::Experiment& e);
// Resets both sides' prefix caches, confirmed, unless env.empty_caches shows
// they are still as a reset after the previous load left them.
absl::StatusOr<Counters> CacheReset(StageEnv& env, const v1::Experiment& e);
// After `e`'s load drained: resets both caches now, within `budget`, and
// returns what the next CacheReset checks instead of resetting again.
absl::StatusOr<EmptyCaches> ResetCachesAhead(StageEnv& env, const v1::Experiment& e,
                                             absl::Duration budget);
absl::StatusOr<Counters> CacheSeed(StageEnv& env, const v1::Experiment& e);

// Progress of the formal load as it runs (sent/completed/failed and the
// exact time of the first formal request); `final` for the last figures.
using ProgressFn = std::function<void(const v1::Progress&, bool final)>;
// What the formal load's drain check found: its counters, or why the
// previous load has not drained; and prefill's idle counters, the load's
// "before" for the prefix-cache hit ratio.
struct DrainCheck {
  absl::StatusOr<Counters> confirmed;
  std::optional<InstanceCounters> prefill_idle;
};
// A new load on top of one whose end is unknown (e.g. one cut off by a
// daemon crash) corrupts both, so the formal load starts with this check.
// It only reads the instances: the runner runs it while the formal stage's
// start is synced to disk (docs/design.md §6).
DrainCheck CheckDrained(StageEnv& env, const v1::Experiment& e);
// `drained`: CheckDrained's answer; a failed check fails the load unsent.
absl::StatusOr<Counters> FormalLoad(StageEnv& env, const v1::Experiment& e, int attempt,
                                    const ProgressFn& on_progress, DrainCheck drained);
// Every instance reports no running and no waiting request within
// limits.drain_timeout; FAILED_PRECONDITION naming what is still busy.
// The instances are scraped at the same time; with `prefill_idle`, prefill's
// counters from the check that found everything idle are stored there.
absl::StatusOr<Counters> DrainConfirm(StageEnv& env, const v1::Experiment& e,
                                      std::optional<InstanceCounters>* prefill_idle = nullptr);
// The drain_confirm stage: DrainConfirm, then, with the lane's record
// (env.empty_caches), the caches reset while the instances are known idle,
// so the next experiment's cache_reset needs one scrape per side instead of
// a confirmed reset (docs/design.md §5). A reset that fails here costs only
// its time: the next cache_reset then resets as ever.
absl::StatusOr<Counters> DrainConfirmStage(StageEnv& env, const v1::Experiment& e);

// Reads the stored formal records of the latest attempt (or of
// plan.raw_records_from) and analyzes them.
absl::StatusOr<v1::Result> AnalyzeStored(StageEnv& env, const v1::Experiment& e);
// Compares with analysis.baseline, or with the scenario's best succeeded
// experiment; nullopt when there is nothing to compare with.
absl::StatusOr<std::optional<v1::Decision>> DecideAgainstBaseline(StageEnv& env,
                                                                  const v1::Experiment& e,
                                                                  const v1::Result& result);

// The stored instance of `side`, if any.
std::optional<v1::ServingInstance> InstanceFor(Store& store, v1::Side side);

// Next attempt number for `phase` records of experiment `id` (1 when none).
absl::StatusOr<int> NextAttempt(Store& store, const std::string& id, v1::Phase phase);

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_STAGES_H_
