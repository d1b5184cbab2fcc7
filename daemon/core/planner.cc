#include "daemon/core/planner.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/labels.h"
#include "daemon/core/hot_deployment.h"
#include "daemon/core/spec/scope.h"
#include "daemon/core/stage_table.h"
#include "google/protobuf/util/time_util.h"

namespace servelab::core {
namespace {

using v1::StageAction;

struct StageChoice {
  StageAction action;
  std::string reason;
};

// Launch decision for one side from its fingerprints.
StageChoice DecideLaunch(const std::string& side, const std::string& wanted,
                         const std::optional<HotDeployment>& hot, const std::string& running) {
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

using Choices = std::map<v1::StageName, StageChoice>;

// Only analysis fields changed on a finished experiment, or the records
// were imported: stored raw records answer the question; no request is sent.
void ChooseRecordsOnly(const std::string& reason, Choices& choices) {
  for (const StageInfo& info : StageTable()) {
    if (info.worker == Worker::kLane) choices[info.name] = {v1::STAGE_ACTION_SKIP, reason};
  }
  choices[v1::STAGE_PREFLIGHT] = {v1::STAGE_ACTION_SKIP, reason};
}

// The launch stages from the sides' fingerprints; true when any side starts.
bool ChooseLaunches(const v1::Fingerprints& want, const std::optional<HotDeployment>& hot,
                    Choices& choices) {
  const v1::Fingerprints none;
  const v1::Fingerprints& running = hot.has_value() ? hot->fingerprints : none;
  for (const StageInfo& info : StageTable()) {
    if (info.launches == v1::SIDE_UNSPECIFIED) continue;
    choices[info.name] = DecideLaunch(SideLabel(info.launches), FingerprintOf(want, info.launches),
                                      hot, FingerprintOf(running, info.launches));
  }
  const bool prefill = choices[v1::STAGE_LAUNCH_PREFILL].action == v1::STAGE_ACTION_RUN;
  const bool decode = choices[v1::STAGE_LAUNCH_DECODE].action == v1::STAGE_ACTION_RUN;
  StageChoice& router = choices[v1::STAGE_LAUNCH_ROUTER];
  // A relaunched side may come back on another port: the router follows.
  if ((prefill || decode) && router.action == v1::STAGE_ACTION_REUSE) {
    router = {v1::STAGE_ACTION_RUN,
              absl::StrCat(prefill ? "prefill" : "decode", " relaunches: router re-routes")};
  }
  return prefill || decode || router.action == v1::STAGE_ACTION_RUN;
}

void ChooseWarmup(const v1::ExperimentSpec& spec, const v1::Fingerprints& want,
                  const std::optional<HotDeployment>& hot, bool any_launch, Choices& choices) {
  const int rounds = spec.deployment().warmup().rounds();
  StageChoice& warmup = choices[v1::STAGE_WARMUP];
  if (rounds == 0) {
    warmup = {v1::STAGE_ACTION_SKIP, "deployment.warmup.rounds is 0"};
  } else if (any_launch) {
    warmup = {v1::STAGE_ACTION_RUN, absl::StrCat(rounds, " warmup rounds after launch")};
  } else if (!hot->warm || hot->fingerprints.warmup() != want.warmup()) {
    warmup = {v1::STAGE_ACTION_RUN,
              hot->warm ? "warmup settings changed: re-warm" : "not warm yet"};
  } else {
    warmup = {v1::STAGE_ACTION_REUSE, absl::StrCat("warm since ", hot->experiment_id)};
  }
}

// Route check, cache preparation, the formal load and its drain.
void ChooseLoadStages(const v1::ExperimentSpec& spec, bool any_launch, Choices& choices) {
  choices[v1::STAGE_ROUTE_VERIFY] =
      any_launch ? StageChoice{v1::STAGE_ACTION_RUN, "new instances: verify the P/D route"}
                 : StageChoice{v1::STAGE_ACTION_REUSE, "route verified on the running instances"};
  const v1::DatasetSpec& dataset = spec.workload().dataset();
  const double ratio = dataset.prefix_cache_ratio();
  const bool seed = ratio > 0 && spec.workload().cache_prep() != v1::CACHE_PREP_RESET;
  // Measurements need a known cache state: always reset (cheap), then seed
  // when the scenario expects prefix hits.
  choices[v1::STAGE_CACHE_RESET] = {
      v1::STAGE_ACTION_RUN, seed ? "reset before seeding" : "zero-cache scenario: start empty"};
  choices[v1::STAGE_CACHE_SEED] =
      seed ? StageChoice{v1::STAGE_ACTION_RUN,
                         absl::StrCat("seed ", dataset.prefix_groups(), " prefix groups for a ",
                                      ratio, " hit ratio")}
           : StageChoice{v1::STAGE_ACTION_SKIP,
                         ratio > 0 ? "cache_prep is reset" : "no shared prefixes to seed"};
  choices[v1::STAGE_FORMAL_LOAD] = {
      v1::STAGE_ACTION_RUN,
      absl::StrCat(spec.workload().num_requests(), " requests at concurrency ",
                   spec.workload().concurrency())};
  choices[v1::STAGE_DRAIN_CONFIRM] = {v1::STAGE_ACTION_RUN,
                                      "confirm every request ended before releasing the lane"};
}

}  // namespace

std::string ShortHash(const std::string& hash) { return hash.substr(0, 8); }

v1::Plan MakePlan(const PlanInput& input) {
  v1::Plan plan;
  *plan.mutable_fingerprints() = spec::ComputeFingerprints(input.spec);
  if (input.hot.has_value()) plan.set_planned_against(input.hot->experiment_id);

  Choices choices;
  choices[v1::STAGE_FREEZE] = {v1::STAGE_ACTION_RUN, "freeze the spec"};
  choices[v1::STAGE_PREFLIGHT] = {v1::STAGE_ACTION_RUN,
                                  "render launch commands and load plan, check files and limits"};
  if (input.reanalysis.has_value()) {
    ChooseRecordsOnly(absl::StrCat("analysis-only delta: raw records of ",
                                   input.reanalysis->experiment_id, " are reused"),
                      choices);
    plan.set_raw_records_from(input.reanalysis->experiment_id);
  } else if (input.imported.has_value()) {
    ChooseRecordsOnly(absl::StrCat("imported: the records were measured by ", input.imported->tool,
                                   "; nothing is launched or sent"),
                      choices);
  } else {
    const bool any_launch = ChooseLaunches(plan.fingerprints(), input.hot, choices);
    ChooseWarmup(input.spec, plan.fingerprints(), input.hot, any_launch, choices);
    ChooseLoadStages(input.spec, any_launch, choices);
    plan.set_adds_launch(any_launch);
    plan.set_adds_warmup(choices[v1::STAGE_WARMUP].action == v1::STAGE_ACTION_RUN);
  }
  choices[v1::STAGE_ANALYZE] = {v1::STAGE_ACTION_RUN, "analyze the stored raw records"};
  choices[v1::STAGE_DECIDE] = {v1::STAGE_ACTION_RUN, "compare with the scenario's baseline"};

  absl::Duration predicted;
  for (const StageInfo& info : StageTable()) {
    const StageChoice& choice = choices[info.name];
    v1::PlannedStage& planned = *plan.add_stages();
    planned.set_stage(info.name);
    planned.set_action(choice.action);
    planned.set_reason(choice.reason);
    auto past = input.history.find(info.name);
    if (info.phase == StagePhase::kPrepare && choice.action == v1::STAGE_ACTION_RUN &&
        past != input.history.end()) {
      predicted += past->second;
    }
  }
  *plan.mutable_predicted_preparation() =
      google::protobuf::util::TimeUtil::NanosecondsToDuration(absl::ToInt64Nanoseconds(predicted));
  return plan;
}

}  // namespace servelab::core
