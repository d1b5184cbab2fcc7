#include "daemon/core/control_plane.h"

#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/labels.h"
#include "common/status_macros.h"
#include "daemon/core/experiment_draft.h"
#include "daemon/core/hot_deployment.h"
#include "daemon/core/planner.h"
#include "daemon/core/spec/freeze.h"
#include "daemon/core/spec/scope.h"
#include "daemon/core/spec/spec_delta.h"
#include "daemon/core/spec/spec_text.h"
#include "daemon/core/store_pages.h"
#include "google/protobuf/util/time_util.h"

namespace servelab::core {
namespace {

constexpr auto ToProto = ToTimestamp;
constexpr auto FromProto = FromTimestamp;

// The scenario's best succeeded experiment so far, by its decision window's
// output tokens/s per device.
void KeepIfBest(const v1::Experiment& e, std::map<std::string, v1::ScenarioBest>& best) {
  const v1::WindowResult& window = e.spec().analysis().decision().window() == v1::WINDOW_STEADY
                                       ? e.result().steady()
                                       : e.result().whole();
  const double value = window.output_tokens_per_second_per_device();
  auto it = best.find(e.spec().scenario());
  if (it != best.end() && value <= it->second.value()) return;
  v1::ScenarioBest& b = best[e.spec().scenario()];
  b.set_scenario(e.spec().scenario());
  b.set_experiment_id(e.id());
  b.set_metric(absl::StrCat(e.spec().analysis().decision().metric(), " (", window.name(), ")"));
  b.set_value(value);
}

// Experiments per state label, every state listed (0 when none).
std::map<std::string, int64_t> ByState(const std::vector<ExperimentCount>& stored) {
  std::map<std::string, int64_t> counts;
  for (int i = v1::ExperimentState_MIN; i <= v1::ExperimentState_MAX; ++i) {
    if (v1::ExperimentState_IsValid(i) && i != v1::EXPERIMENT_STATE_UNSPECIFIED) {
      counts[StateLabel(static_cast<v1::ExperimentState>(i))] = 0;
    }
  }
  for (const ExperimentCount& c : stored) counts[StateLabel(c.state)] += c.count;
  return counts;
}

// What `e` left in the prefix cache: nothing when its drain reset the
// caches ahead, else its formal load's prompts; "" when its formal load did
// not succeed.
std::string CacheStateLeftBy(const v1::Experiment& e) {
  for (const v1::Stage& stage : e.stages()) {
    if (stage.name() == v1::STAGE_DRAIN_CONFIRM && stage.status() == v1::STAGE_STATUS_SUCCEEDED) {
      auto reset = stage.counters().find("caches_reset_ahead");
      if (reset != stage.counters().end() && reset->second == 1) {
        return absl::StrCat("empty: reset after ", e.id(),
                            "'s formal load drained; the next experiment checks that nothing "
                            "has touched it since");
      }
    }
  }
  for (const v1::Stage& stage : e.stages()) {
    if (stage.name() != v1::STAGE_FORMAL_LOAD || stage.status() != v1::STAGE_STATUS_SUCCEEDED) {
      continue;
    }
    const v1::DatasetSpec& d = e.spec().workload().dataset();
    return absl::StrCat(
        "holds the prompts of ", e.id(), "'s formal load (", d.input_tokens(), "-token prompts",
        d.prefix_cache_ratio() > 0 ? absl::StrCat(", ", d.prefix_groups(), " prefix groups seeded")
                                   : "",
        "); the next experiment resets it");
  }
  return "";
}

bool OnlyAnalysisOrNothing(const std::vector<v1::FieldChange>& changes) {
  for (const v1::FieldChange& change : changes) {
    if (change.scope() != v1::SCOPE_ANALYSIS && change.scope() != v1::SCOPE_NOTHING) return false;
  }
  return true;
}

std::string ChangeList(const std::vector<v1::FieldChange>& changes) {
  std::vector<std::string> parts;
  for (const v1::FieldChange& c : changes) {
    parts.push_back(absl::StrCat(c.path(), ": ", c.old_value().empty() ? "(unset)" : c.old_value(),
                                 " -> ", c.new_value().empty() ? "(unset)" : c.new_value()));
  }
  return absl::StrJoin(parts, ", ");
}

// Without an executor nothing will run the experiment: say so instead of
// pretending it is about to run.
constexpr char kNoRunnerBlocker[] = "queued: this daemon has no stage runner";
constexpr char kPausedBlocker[] = "queued: the daemon was started paused and runs nothing";
constexpr char kQueuedBlocker[] = "queued: waiting for its turn on the accelerator lane";

}  // namespace

absl::Status ControlPlane::CheckAcceptingWork() {
  if (executor_ == nullptr) return absl::OkStatus();
  absl::Status latched = executor_->LatchedError();
  if (latched.ok()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "servelabd accepts no new work since ", latched.message(),
      "; fix the storage (disk space, a process holding servelab.db) and restart servelabd, "
      "which re-classifies what was left running"));
}

const char* ControlPlane::QueuedBlocker() const {
  if (executor_ == nullptr) return kNoRunnerBlocker;
  return paused_ ? kPausedBlocker : kQueuedBlocker;
}

ControlPlane::ControlPlane(Store& store, Clock& clock)
    : store_(store), clock_(clock), ledger_(store, clock) {
  // A succeeded experiment's result never changes again, so the best per
  // scenario only ever moves by a new success: kept up to date from the
  // ledger instead of re-read from the whole history by every summary.
  best_subscription_ = ledger_.Subscribe("", [this](const v1::Experiment& e) {
    if (e.state() != v1::EXPERIMENT_STATE_SUCCEEDED || !e.has_result()) return;
    absl::MutexLock lock(&best_mu_);
    if (best_loaded_) KeepIfBest(e, best_);
  });
}

ControlPlane::~ControlPlane() { ledger_.Unsubscribe(best_subscription_); }

absl::StatusOr<std::map<std::string, v1::ScenarioBest>> ControlPlane::BestPerScenario() {
  absl::MutexLock lock(&best_mu_);
  if (!best_loaded_) {
    // Once per daemon: successes committed from here on reach the listener,
    // which waits for this lock and then sees best_loaded_.
    SERVELAB_RETURN_IF_ERROR(ForEachExperiment(store_, {.state = v1::EXPERIMENT_STATE_SUCCEEDED},
                                               [&](const v1::Experiment& e) {
                                                 if (e.has_result()) KeepIfBest(e, best_);
                                                 return true;
                                               }));
    best_loaded_ = true;
  }
  return best_;
}

absl::StatusOr<v1::Experiment> ControlPlane::Submit(const v1::SubmitExperimentRequest& request) {
  const absl::Time received = clock_.Now();
  if (!request.validate_only()) SERVELAB_RETURN_IF_ERROR(CheckAcceptingWork());
  v1::ExperimentSpec spec;
  std::optional<v1::Experiment> base_experiment;
  SERVELAB_RETURN_IF_ERROR(ReadSource(request, spec, base_experiment));
  SERVELAB_RETURN_IF_ERROR(ApplyDelta(spec, request.unset(), request.set()));
  SERVELAB_ASSIGN_OR_RETURN(spec::FrozenSpec frozen, spec::Freeze(spec, request.base_dir()));

  v1::Experiment experiment;
  std::vector<v1::FieldChange> changes;
  if (base_experiment.has_value()) {
    experiment.set_base_id(base_experiment->id());
    changes = spec::DiffSpecs(base_experiment->spec(), frozen.spec);
    for (const v1::FieldChange& change : changes) *experiment.add_changes() = change;
  }
  std::optional<ReanalysisSource> reanalysis;
  if (base_experiment.has_value() && base_experiment->state() == v1::EXPERIMENT_STATE_SUCCEEDED &&
      !changes.empty() && OnlyAnalysisOrNothing(changes)) {
    reanalysis = ReanalysisSource{base_experiment->id()};
  }
  SERVELAB_ASSIGN_OR_RETURN(std::optional<HotDeployment> hot, ReadHotDeployment(store_));
  PlanInput plan_input{.spec = frozen.spec, .hot = hot, .reanalysis = reanalysis};
  SERVELAB_ASSIGN_OR_RETURN(plan_input.history, store_.MeanRecentStageDurations(kPredictionRuns));
  *experiment.mutable_plan() = MakePlan(plan_input);

  *experiment.mutable_spec() = frozen.spec;
  experiment.set_spec_sha256(frozen.sha256);
  experiment.set_state(v1::EXPERIMENT_STATE_QUEUED);
  experiment.set_blocker(QueuedBlocker());
  experiment.mutable_progress()->set_formal_requests_planned(
      reanalysis.has_value() ? 0
                             : int64_t{frozen.spec.workload().num_requests()} *
                                   std::max(1, frozen.spec.workload().repeats()));
  const absl::Time frozen_at = clock_.Now();
  *experiment.mutable_submitted_at() = ToProto(received);
  *experiment.mutable_updated_at() = ToProto(frozen_at);
  AddStageRows(experiment, received, frozen_at);
  if (request.validate_only()) {
    if (executor_ != nullptr && !reanalysis.has_value()) {
      for (v1::RenderedCommand& c : executor_->RenderCommands(experiment.spec())) {
        *experiment.mutable_plan()->add_commands() = std::move(c);
      }
    }
    return experiment;
  }
  return Create(std::move(experiment));
}

absl::Status ControlPlane::ReadSource(const v1::SubmitExperimentRequest& request,
                                      v1::ExperimentSpec& spec,
                                      std::optional<v1::Experiment>& base_experiment) {
  switch (request.source_case()) {
    case v1::SubmitExperimentRequest::kSpecText: {
      SERVELAB_ASSIGN_OR_RETURN(spec,
                                spec::ParseSpecText(request.spec_text(), request.spec_name()));
      break;
    }
    case v1::SubmitExperimentRequest::kSpec:
      spec = request.spec();
      break;
    case v1::SubmitExperimentRequest::kBaseId: {
      absl::StatusOr<v1::Experiment> base = store_.GetExperiment(request.base_id());
      if (absl::IsNotFound(base.status())) {
        return absl::NotFoundError(absl::StrCat(
            "base_id: experiment \"", absl::CHexEscape(request.base_id()), "\" not found"));
      }
      SERVELAB_RETURN_IF_ERROR(base.status());
      base_experiment = *std::move(base);
      spec = base_experiment->spec();
      spec::ClearFileHashes(spec);
      break;
    }
    case v1::SubmitExperimentRequest::SOURCE_NOT_SET:
      return absl::InvalidArgumentError("source: one of spec_text, spec or base_id is required");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Experiment> ControlPlane::Create(v1::Experiment experiment) {
  EventText event{.kind = "submitted",
                  .detail = absl::StrCat("frozen spec ", ShortHash(experiment.spec_sha256()))};
  if (!experiment.base_id().empty()) {
    absl::StrAppend(&event.detail, " from base ", experiment.base_id(), "; ",
                    experiment.changes_size(), " changed field(s)");
  }
  absl::MutexLock enqueue_lock(&enqueue_mu_);
  SERVELAB_ASSIGN_OR_RETURN(v1::Experiment created, ledger_.Create(std::move(experiment), event));
  if (executor_ != nullptr) executor_->Enqueue(created.id());
  return created;
}

absl::StatusOr<v1::Experiment> ControlPlane::Get(std::string_view id) {
  absl::StatusOr<v1::Experiment> experiment = store_.GetExperiment(id);
  if (absl::IsNotFound(experiment.status())) {
    return absl::NotFoundError(
        absl::StrCat("id: experiment \"", absl::CHexEscape(absl::string_view(id.data(), id.size())),
                     "\" not found"));
  }
  return experiment;
}

absl::StatusOr<v1::ListExperimentsResponse> ControlPlane::List(
    const v1::ListExperimentsRequest& request) {
  constexpr int kDefaultPageSize = 100;
  constexpr int kMaxPageSize = 500;
  if (request.page_size() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("page_size: must be 0 (the default, ",
                                                   kDefaultPageSize, ") or positive, not ",
                                                   request.page_size()));
  }
  // The token is the last id of the previous page: opaque to clients, and
  // still valid after later experiments were stored.
  if (!request.page_token().empty() && !store_.GetExperiment(request.page_token()).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token: \"", request.page_token(),
                     "\" is not a token this daemon returned (pass next_page_token as is)"));
  }
  const int page_size =
      request.page_size() == 0 ? kDefaultPageSize : std::min(request.page_size(), kMaxPageSize);
  // One more than the page tells whether another page follows.
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::Experiment> found,
                            store_.ListExperiments({.scenario = request.scenario(),
                                                    .state = request.state(),
                                                    .after_id = request.page_token(),
                                                    .limit = page_size + 1}));
  v1::ListExperimentsResponse page;
  for (int i = 0; i < static_cast<int>(found.size()) && i < page_size; ++i) {
    *page.add_experiments() = std::move(found[i]);
  }
  if (static_cast<int>(found.size()) > page_size) {
    page.set_next_page_token(page.experiments(page_size - 1).id());
  }
  return page;
}

absl::StatusOr<v1::Experiment> ControlPlane::Resume(const v1::ResumeExperimentRequest& request) {
  SERVELAB_RETURN_IF_ERROR(CheckAcceptingWork());
  absl::MutexLock enqueue_lock(&enqueue_mu_);
  SERVELAB_ASSIGN_OR_RETURN(
      v1::Experiment resumed,
      ledger_.Update(request.id(), [&](v1::Experiment& experiment) -> absl::StatusOr<EventText> {
        v1::ExperimentSpec spec = experiment.spec();
        // File hashes stay: a resume runs on the files the experiment was
        // frozen with, and Freeze refuses files that changed since.
        SERVELAB_RETURN_IF_ERROR(ApplyDelta(spec, request.unset(), request.set()));
        SERVELAB_ASSIGN_OR_RETURN(spec::FrozenSpec frozen, spec::Freeze(spec, request.base_dir()));
        std::vector<v1::FieldChange> changes = spec::DiffSpecs(experiment.spec(), frozen.spec);
        for (const v1::FieldChange& change : changes) {
          if (change.scope() != v1::SCOPE_NOTHING && change.scope() != v1::SCOPE_ANALYSIS) {
            return absl::InvalidArgumentError(absl::StrCat(
                change.path(), ": a ", spec::ScopeName(change.scope()),
                "-scope field cannot change on resume (only NOTHING and ANALYSIS fields can); "
                "submit a new experiment based on ",
                experiment.id(), " instead"));
          }
        }
        if (experiment.state() != v1::EXPERIMENT_STATE_FAILED) {
          return absl::FailedPreconditionError(
              absl::StrCat(experiment.id(), " is ", StateLabel(experiment.state()),
                           ": only a failed experiment can be resumed"));
        }
        *experiment.mutable_spec() = frozen.spec;
        experiment.set_spec_sha256(frozen.sha256);
        experiment.set_state(v1::EXPERIMENT_STATE_QUEUED);
        experiment.set_blocker(QueuedBlocker());
        EventText event{.kind = "resumed",
                        .detail = absl::StrCat("resume after ",
                                               v1::FailureClass_Name(experiment.failure_class()))};
        if (!changes.empty()) absl::StrAppend(&event.detail, " with ", ChangeList(changes));
        return event;
      }));
  if (executor_ != nullptr) executor_->Enqueue(resumed.id());
  return resumed;
}

absl::StatusOr<v1::Experiment> ControlPlane::Cancel(std::string_view id) {
  bool running = false;
  absl::StatusOr<v1::Experiment> cancelled =
      ledger_.Update(id, [&](v1::Experiment& experiment) -> absl::StatusOr<EventText> {
        if (IsFinal(experiment.state())) {
          return absl::FailedPreconditionError(
              absl::StrCat(experiment.id(), " is already ", StateLabel(experiment.state())));
        }
        if (experiment.state() == v1::EXPERIMENT_STATE_RUNNING && executor_ != nullptr) {
          // The executor owns a running experiment: it stops the work first
          // and records the cancellation itself.
          running = true;
          return absl::CancelledError("handed to the executor");
        }
        const v1::ExperimentState before = experiment.state();
        experiment.set_state(v1::EXPERIMENT_STATE_CANCELLED);
        experiment.set_blocker("");
        return EventText{"cancelled", absl::StrCat(StateLabel(before), " -> cancelled")};
      });
  if (!running) return cancelled;
  // Returns at once: the executor records CANCELLED at its next safe point,
  // which Watch reports.
  SERVELAB_RETURN_IF_ERROR(executor_->CancelRunning(std::string(id)));
  return Get(id);
}

absl::StatusOr<std::map<std::string, int64_t>> ControlPlane::CountByState() {
  SERVELAB_ASSIGN_OR_RETURN(std::vector<ExperimentCount> stored, store_.CountExperiments());
  return ByState(stored);
}

absl::StatusOr<std::string> ControlPlane::CacheState() {
  // Only a formal load that ran to its end leaves a state worth naming: the
  // last of them is one index lookup, however many experiments were queued
  // or cancelled since.
  SERVELAB_ASSIGN_OR_RETURN(std::string last,
                            store_.LatestRunOf(v1::STAGE_FORMAL_LOAD, v1::STAGE_STATUS_SUCCEEDED));
  if (last.empty()) return std::string();
  SERVELAB_ASSIGN_OR_RETURN(v1::Experiment e, store_.GetExperiment(last));
  return CacheStateLeftBy(e);
}

absl::StatusOr<v1::Summary> ControlPlane::Summary() {
  v1::Summary summary;
  summary.set_serving(true);
  summary.set_paused(paused_);
  // Each part is a count or a listing of what is current (queued, running),
  // never of the whole history (docs/design.md §12).
  SERVELAB_ASSIGN_OR_RETURN(std::vector<ExperimentCount> stored, store_.CountExperiments());
  for (const auto& [state, count] : ByState(stored))
    (*summary.mutable_experiments_by_state())[state] = count;
  for (const ExperimentCount& c : stored) {
    if (c.state != v1::EXPERIMENT_STATE_FAILED) continue;
    v1::FailureCount& f = *summary.add_recent_failures();
    f.set_failure_class(c.failure_class);
    f.set_count(c.count);
    f.set_latest_experiment_id(c.latest_id);
  }
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::Experiment> queued,
                            store_.ListExperiments({.state = v1::EXPERIMENT_STATE_QUEUED}));
  for (const v1::Experiment& e : queued) summary.add_queue(e.id());
  if (executor_ != nullptr) {
    // The runner knows who holds the lane; a RUNNING experiment may still be
    // in preflight on the CPU worker.
    auto [owner, stage] = executor_->LaneOwner();
    summary.set_lane_owner(owner);
    summary.set_lane_stage(owner.empty() ? v1::STAGE_UNSPECIFIED : stage);
  } else {
    SERVELAB_ASSIGN_OR_RETURN(
        std::vector<v1::Experiment> running,
        store_.ListExperiments({.state = v1::EXPERIMENT_STATE_RUNNING, .limit = 1}));
    for (const v1::Experiment& e : running) {
      summary.set_lane_owner(e.id());
      for (const v1::Stage& stage : e.stages()) {
        if (stage.status() == v1::STAGE_STATUS_RUNNING) summary.set_lane_stage(stage.name());
      }
    }
  }
  SERVELAB_ASSIGN_OR_RETURN(auto best, BestPerScenario());
  for (auto& [scenario, b] : best) *summary.add_best() = b;

  SERVELAB_ASSIGN_OR_RETURN(*summary.mutable_hot_deployment(), DescribeHotDeployment(store_));
  if (!summary.hot_deployment().experiment_id().empty()) {
    SERVELAB_ASSIGN_OR_RETURN(*summary.mutable_hot_deployment()->mutable_cache_state(),
                              CacheState());
  }
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::Experiment> latest,
                            store_.ListExperiments({.limit = 1, .newest_first = true}));
  FillNextStep(summary, latest.empty() ? nullptr : &latest.front());
  return summary;
}

void ControlPlane::FillNextStep(v1::Summary& summary, const v1::Experiment* latest) {
  v1::NextStep& next = *summary.mutable_next_step();
  if (absl::Status latched = CheckAcceptingWork(); !latched.ok()) {
    summary.set_serving(false);
    next.set_action(v1::NextStep::FIX_DAEMON);
    next.set_reason(std::string(latched.message()));
  } else if (!summary.lane_owner().empty()) {
    next.set_action(v1::NextStep::WAIT_DONE);
    next.set_experiment_id(summary.lane_owner());
    next.set_reason("it holds the accelerator lane");
  } else if (summary.queue_size() > 0) {
    const bool stuck = executor_ == nullptr || paused_;
    next.set_action(stuck ? v1::NextStep::INSPECT : v1::NextStep::WAIT_SENT);
    next.set_experiment_id(summary.queue(0));
    next.set_reason(stuck ? absl::StrCat(summary.queue_size(), " queued; ", QueuedBlocker())
                          : "it runs next");
  } else if (latest == nullptr) {
    next.set_action(v1::NextStep::SUBMIT_BASE);
    next.set_reason("nothing is stored yet");
  } else {
    next.set_action(v1::NextStep::SUBMIT_DELTA);
    next.set_experiment_id(latest->id());
    next.set_reason("the lane is idle");
  }
}

int ControlPlane::Subscribe(const std::string& id, Listener listener) {
  return ledger_.Subscribe(id, std::move(listener));
}

void ControlPlane::Unsubscribe(int subscription) { ledger_.Unsubscribe(subscription); }

}  // namespace servelab::core
