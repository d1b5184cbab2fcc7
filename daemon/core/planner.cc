#include "daemon/core/planner.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "daemon/core/spec/scope.h"
#include "google/protobuf/util/time_util.h"

namespace servelab::core {
namespace {

using v1::StageAction;

struct Decision {
  StageAction action;
  std::string reason;
};

// Launch decision for one side from its fingerprints.
Decision DecideLaunch(const char* side, const std::string& wanted,
                      const std::optional<HotState>& hot, const std::string& running) {
  if (!hot.has_value() || running.empty()) {
    return {v1::STAGE_ACTION_RUN, absl::StrCat("no ", side, " instance running")};
  }
  if (running == wanted) {
    return {v1::STAGE_ACTION_REUSE, absl::StrCat(side, " fingerprint unchanged ", ShortHash(wanted),
                                                 " (running since ", hot->experiment_id, ")")};
  }
  return {v1::STAGE_ACTION_RUN, absl::StrCat(side, " fingerprint ", ShortHash(running), " -> ",
                                             ShortHash(wanted), ": relaunch ", side)};
}

}  // namespace

const std::vector<v1::StageName>& AllStages() {
  static const auto* stages = new std::vector<v1::StageName>{
      v1::STAGE_FREEZE,        v1::STAGE_PREFLIGHT,     v1::STAGE_LAUNCH_PREFILL,
      v1::STAGE_LAUNCH_DECODE, v1::STAGE_LAUNCH_ROUTER, v1::STAGE_WARMUP,
      v1::STAGE_ROUTE_VERIFY,  v1::STAGE_CACHE_RESET,   v1::STAGE_CACHE_SEED,
      v1::STAGE_FORMAL_LOAD,   v1::STAGE_DRAIN_CONFIRM, v1::STAGE_ANALYZE,
      v1::STAGE_DECIDE};
  return *stages;
}

std::string StageLabel(v1::StageName stage) {
  std::string name = v1::StageName_Name(stage);
  return absl::AsciiStrToLower(name.substr(std::string("STAGE_").size()));
}

std::string ShortHash(const std::string& hash) { return hash.substr(0, 8); }

v1::Plan MakePlan(const PlanInput& input) {
  const v1::ExperimentSpec& spec = input.spec;
  v1::Plan plan;
  *plan.mutable_fingerprints() = spec::ComputeFingerprints(spec);
  const v1::Fingerprints& want = plan.fingerprints();
  if (input.hot.has_value()) plan.set_planned_against(input.hot->experiment_id);

  std::map<v1::StageName, Decision> d;
  d[v1::STAGE_FREEZE] = {v1::STAGE_ACTION_RUN, "freeze the spec"};
  d[v1::STAGE_PREFLIGHT] = {v1::STAGE_ACTION_RUN,
                            "render launch commands and load plan, check files and limits"};

  if (input.reanalysis.has_value()) {
    // Only analysis fields changed on a finished experiment: its stored raw
    // records answer the new question; no request is sent.
    const std::string reason = absl::StrCat("analysis-only delta: raw records of ",
                                            input.reanalysis->experiment_id, " are reused");
    for (v1::StageName s : AllStages()) {
      if (s >= v1::STAGE_LAUNCH_PREFILL && s <= v1::STAGE_DRAIN_CONFIRM) {
        d[s] = {v1::STAGE_ACTION_SKIP, reason};
      }
    }
    d[v1::STAGE_PREFLIGHT] = {v1::STAGE_ACTION_SKIP, reason};
    plan.set_raw_records_from(input.reanalysis->experiment_id);
  } else {
    const std::optional<HotState>& hot = input.hot;
    const v1::Fingerprints none;
    const v1::Fingerprints& running = hot.has_value() ? hot->fingerprints : none;
    d[v1::STAGE_LAUNCH_PREFILL] = DecideLaunch("prefill", want.prefill(), hot, running.prefill());
    d[v1::STAGE_LAUNCH_DECODE] = DecideLaunch("decode", want.decode(), hot, running.decode());
    d[v1::STAGE_LAUNCH_ROUTER] = DecideLaunch("router", want.router(), hot, running.router());
    const bool prefill_relaunch = d[v1::STAGE_LAUNCH_PREFILL].action == v1::STAGE_ACTION_RUN;
    const bool decode_relaunch = d[v1::STAGE_LAUNCH_DECODE].action == v1::STAGE_ACTION_RUN;
    // A relaunched side may come back on another port: the router follows.
    if ((prefill_relaunch || decode_relaunch) &&
        d[v1::STAGE_LAUNCH_ROUTER].action == v1::STAGE_ACTION_REUSE) {
      d[v1::STAGE_LAUNCH_ROUTER] = {
          v1::STAGE_ACTION_RUN,
          absl::StrCat(prefill_relaunch ? "prefill" : "decode", " relaunches: router re-routes")};
    }
    const bool any_launch = prefill_relaunch || decode_relaunch ||
                            d[v1::STAGE_LAUNCH_ROUTER].action == v1::STAGE_ACTION_RUN;
    const int rounds = spec.deployment().warmup().rounds();
    if (rounds == 0) {
      d[v1::STAGE_WARMUP] = {v1::STAGE_ACTION_SKIP, "deployment.warmup.rounds is 0"};
    } else if (any_launch) {
      d[v1::STAGE_WARMUP] = {v1::STAGE_ACTION_RUN,
                             absl::StrCat(rounds, " warmup rounds after launch")};
    } else if (!hot->warm || running.warmup() != want.warmup()) {
      d[v1::STAGE_WARMUP] = {v1::STAGE_ACTION_RUN,
                             hot->warm ? "warmup settings changed: re-warm" : "not warm yet"};
    } else {
      d[v1::STAGE_WARMUP] = {v1::STAGE_ACTION_REUSE,
                             absl::StrCat("warm since ", hot->experiment_id)};
    }
    d[v1::STAGE_ROUTE_VERIFY] =
        any_launch ? Decision{v1::STAGE_ACTION_RUN, "new instances: verify the P/D route"}
                   : Decision{v1::STAGE_ACTION_REUSE, "route verified on the running instances"};

    const double ratio = spec.workload().dataset().prefix_cache_ratio();
    const bool seed = ratio > 0 && spec.workload().cache_prep() != v1::CACHE_PREP_RESET;
    // Measurements need a known cache state: always reset (cheap), then seed
    // when the scenario expects prefix hits.
    d[v1::STAGE_CACHE_RESET] = {v1::STAGE_ACTION_RUN,
                                seed ? "reset before seeding" : "zero-cache scenario: start empty"};
    d[v1::STAGE_CACHE_SEED] =
        seed ? Decision{v1::STAGE_ACTION_RUN,
                        absl::StrCat("seed ", spec.workload().dataset().prefix_groups(),
                                     " prefix groups for a ", ratio, " hit ratio")}
             : Decision{v1::STAGE_ACTION_SKIP,
                        ratio > 0 ? "cache_prep is reset" : "no shared prefixes to seed"};
    d[v1::STAGE_FORMAL_LOAD] = {v1::STAGE_ACTION_RUN, absl::StrCat(spec.workload().num_requests(),
                                                                   " requests at concurrency ",
                                                                   spec.workload().concurrency())};
    d[v1::STAGE_DRAIN_CONFIRM] = {v1::STAGE_ACTION_RUN,
                                  "confirm every request ended before releasing the lane"};
    plan.set_adds_launch(any_launch);
    plan.set_adds_warmup(d[v1::STAGE_WARMUP].action == v1::STAGE_ACTION_RUN);
  }
  d[v1::STAGE_ANALYZE] = {v1::STAGE_ACTION_RUN, "analyze the stored raw records"};
  d[v1::STAGE_DECIDE] = {v1::STAGE_ACTION_RUN, "compare with the scenario's baseline"};

  absl::Duration predicted;
  for (v1::StageName s : AllStages()) {
    v1::PlannedStage& planned = *plan.add_stages();
    planned.set_stage(s);
    planned.set_action(d[s].action);
    planned.set_reason(d[s].reason);
    auto it = input.history.find(s);
    if (s < v1::STAGE_FORMAL_LOAD && d[s].action == v1::STAGE_ACTION_RUN &&
        it != input.history.end()) {
      predicted += it->second;
    }
  }
  *plan.mutable_predicted_preparation() =
      google::protobuf::util::TimeUtil::NanosecondsToDuration(absl::ToInt64Nanoseconds(predicted));
  return plan;
}

}  // namespace servelab::core
