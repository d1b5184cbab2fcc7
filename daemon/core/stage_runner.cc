#include "daemon/core/stage_runner.h"

#include <algorithm>
#include <future>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/crash_points.h"
#include "common/labels.h"
#include "common/status_macros.h"
#include "daemon/core/failure_class.h"
#include "daemon/core/hot_deployment.h"
#include "daemon/core/planner.h"
#include "daemon/core/stage_table.h"
#include "google/protobuf/util/message_differencer.h"

namespace servelab::core {
namespace {

bool Done(v1::StageStatus status) {
  return status == v1::STAGE_STATUS_SUCCEEDED || status == v1::STAGE_STATUS_REUSED ||
         status == v1::STAGE_STATUS_SKIPPED;
}

bool IsLaneStage(v1::StageName stage) { return StageInfoOf(stage).worker == Worker::kLane; }

// A stage's writes are bookkeeping between facts (store.h), except the
// formal load's: its start comes before requests that cannot be taken back,
// and its end is the load's outcome (docs/design.md §5, "Durability").
Durability StageWriteDurability(v1::StageName stage) {
  return StageInfoOf(stage).phase == StagePhase::kLoad ? Durability::kSynced : Durability::kOrdered;
}

// Reused and skipped stages are recorded, not run.
bool Marked(v1::StageAction action) {
  return action == v1::STAGE_ACTION_SKIP || action == v1::STAGE_ACTION_REUSE;
}

v1::Stage* FindStage(v1::Experiment& e, v1::StageName name) {
  for (v1::Stage& stage : *e.mutable_stages()) {
    if (stage.name() == name) return &stage;
  }
  v1::Stage* stage = e.add_stages();  // Older experiments may lack a stage row.
  stage->set_name(name);
  stage->set_status(v1::STAGE_STATUS_PENDING);
  return stage;
}

const v1::Stage* FindStage(const v1::Experiment& e, v1::StageName name) {
  for (const v1::Stage& stage : e.stages()) {
    if (stage.name() == name) return &stage;
  }
  return nullptr;
}

// A launch stage keeps the exact command its side was started with, so the
// experiment's report shows what ran.
void RecordLaunchCommand(Store& store, v1::Stage& stage) {
  const v1::Side side = StageInfoOf(stage.name()).launches;
  if (side == v1::SIDE_UNSPECIFIED) return;
  stage.clear_commands();
  std::optional<v1::ServingInstance> instance = InstanceFor(store, side);
  if (!instance.has_value() || instance->command_text().empty()) return;
  v1::RenderedCommand& command = *stage.add_commands();
  command.set_side(side);
  command.set_text(instance->command_text());
}

void ResetStage(v1::Stage& stage) {
  stage.set_status(v1::STAGE_STATUS_PENDING);
  stage.clear_error();
}

// The lane stages from `from` on that are not done yet and are reused or
// skipped, up to the first one that runs: recorded in one write.
std::vector<v1::StageName> MarkedRun(const v1::Experiment& e, v1::StageName from) {
  std::vector<v1::StageName> run;
  for (const StageInfo& info : StageTable()) {
    if (info.worker != Worker::kLane || RunsAfter(from, info.name)) continue;
    const v1::Stage* stage = FindStage(e, info.name);
    if (stage == nullptr || Done(stage->status())) continue;
    if (!Marked(stage->action())) break;
    run.push_back(info.name);
  }
  return run;
}

}  // namespace

StageRunner::StageRunner(Ledger& ledger, InstanceDriver& instances, LoadDriver& load,
                         RunnerMetrics& metrics, Options options)
    : ledger_(ledger),
      instances_(instances),
      load_(load),
      metrics_(metrics),
      options_(std::move(options)) {}

StageRunner::~StageRunner() { Shutdown(); }

void StageRunner::Start() {
  cpu_thread_ = std::thread([this] { CpuLoop(); });
  lane_thread_ = std::thread([this] { LaneLoop(); });
}

void StageRunner::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [id, flag] : cancel_) flag->store(true);
  }
  if (cpu_thread_.joinable()) cpu_thread_.join();
  if (lane_thread_.joinable()) lane_thread_.join();
}

StageRunner::Lane StageRunner::lane() {
  absl::MutexLock lock(&mu_);
  return lane_;
}

StageEnv StageRunner::Env(std::atomic<bool>& cancel) {
  return StageEnv{.store = ledger_.store(),
                  .baselines = baselines_,
                  .instances = instances_,
                  .load = load_,
                  .metrics = metrics_,
                  .clock = ledger_.clock(),
                  .log_dir = options_.log_dir,
                  .cancel = cancel,
                  .stop_grace = options_.stop_grace,
                  .drain_poll = options_.drain_poll};
}

std::shared_ptr<std::atomic<bool>> StageRunner::CancelFlag(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto& flag = cancel_[id];
  if (flag == nullptr) flag = std::make_shared<std::atomic<bool>>(false);
  return flag;
}

void StageRunner::Enqueue(const std::string& id) {
  CancelFlag(id);
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  cpu_tasks_.push_back([this, id] { Prepare(id); });
}

std::vector<v1::RenderedCommand> StageRunner::RenderCommands(const v1::ExperimentSpec& spec) {
  // Its own log directory: rendering may pick ports and names log files,
  // but a plan must never touch what a running instance writes.
  return RenderForPlan(instances_, spec, absl::StrCat(options_.log_dir, "/plan"));
}

absl::Status StageRunner::CancelRunning(const std::string& id) {
  std::shared_ptr<std::atomic<bool>> flag;
  {
    absl::MutexLock lock(&mu_);
    auto it = cancel_.find(id);
    if (it == cancel_.end()) {
      return absl::FailedPreconditionError(absl::StrCat(id, " is not running"));
    }
    flag = it->second;
  }
  // The runner records the cancellation at the next safe point (a running
  // formal load is stopped and drained first); waiting for it here would
  // hold a gRPC thread for as long as a drain takes.
  flag->store(true);
  return absl::OkStatus();
}

absl::Status StageRunner::LatchedError() {
  absl::MutexLock lock(&mu_);
  return latched_error_;
}

bool StageRunner::latched() {
  absl::MutexLock lock(&mu_);
  return !latched_error_.ok();
}

void StageRunner::Latch(const absl::Status& error) {
  {
    absl::MutexLock lock(&mu_);
    if (!latched_error_.ok()) return;
    latched_error_ = error;
    // What runs stops at its next safe point; nothing it does is recorded.
    for (auto& [id, flag] : cancel_) flag->store(true);
  }
  if (options_.on_latched_error) options_.on_latched_error(error);
}

absl::StatusOr<v1::Experiment> StageRunner::Commit(const std::string& id,
                                                   const Ledger::Mutation& mutate) {
  for (int attempt = 1;; ++attempt) {
    if (absl::Status latched = LatchedError(); !latched.ok()) return latched;
    bool refused = false;
    std::string what;
    absl::StatusOr<v1::Experiment> written =
        ledger_.Update(id, [&](v1::Experiment& e) -> absl::StatusOr<EventText> {
          absl::StatusOr<EventText> text = mutate(e);
          refused = !text.ok();
          if (text.ok()) what = absl::StrCat(text->kind, " \"", text->detail, "\"");
          return text;
        });
    // A mutation that declines (e.g. "already final") is an answer, not a
    // failed write; so is an unknown id.
    if (written.ok() || refused || absl::IsNotFound(written.status())) return written;
    if (attempt >= std::max(1, options_.write_attempts)) {
      Latch(absl::Status(
          written.status().code(),
          absl::StrCat("the ledger write of ", id, "'s ", what.empty() ? "state" : what, " failed ",
                       attempt, " times: ", written.status().message())));
      return LatchedError();
    }
    ledger_.clock().SleepFor(options_.write_retry_pause);
  }
}

bool StageRunner::Carried::Holds(v1::StageName stage) const {
  return std::find(ended.begin(), ended.end(), stage) != ended.end();
}

absl::StatusOr<v1::Experiment> StageRunner::CommitWith(const std::string& id, Carried& carried,
                                                       const Ledger::Mutation& mutate) {
  if (carried.writes.empty()) return Commit(id, mutate);
  absl::StatusOr<v1::Experiment> written =
      Commit(id, [&](v1::Experiment& e) -> absl::StatusOr<EventText> {
        std::vector<std::string> details;
        Durability durability = Durability::kOrdered;
        auto add = [&](const EventText& text) {
          if (!text.detail.empty()) details.push_back(text.detail);
          if (text.durability == Durability::kSynced) durability = Durability::kSynced;
        };
        for (const Ledger::Mutation& write : carried.writes) {
          SERVELAB_ASSIGN_OR_RETURN(EventText text, write(e));
          add(text);
        }
        SERVELAB_ASSIGN_OR_RETURN(EventText text, mutate(e));
        add(text);
        text.detail = absl::StrJoin(details, "; ");
        text.durability = durability;
        return text;
      });
  if (!written.ok()) return written;
  for (const std::function<void()>& done : carried.on_written) done();
  carried = Carried();
  return written;
}

void StageRunner::Flush(const std::string& id, Carried& carried) {
  if (carried.writes.empty()) return;
  (void)CommitWith(id, carried, [](v1::Experiment&) -> absl::StatusOr<EventText> {
    return EventText{"stage", "", Durability::kOrdered};
  });
}

void StageRunner::Record(const std::string& id, const Ledger::Mutation& mutate) {
  // A failure is latched by Commit: the runner then stops, and nothing is
  // left to do with it here.
  (void)Commit(id, mutate);
}

void StageRunner::CpuLoop() {
  while (true) {
    Task task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](StageRunner* r) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return r->stopping_ || (r->latched_error_.ok() && !r->cpu_tasks_.empty());
          },
          this));
      if (stopping_) return;
      task = std::move(cpu_tasks_.front());
      cpu_tasks_.pop_front();
    }
    task();
  }
}

void StageRunner::LaneLoop() {
  while (true) {
    std::string id;
    absl::Time released;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](StageRunner* r) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return r->stopping_ ||
                   (r->latched_error_.ok() && !r->releasing_ && !r->lane_queue_.empty());
          },
          this));
      if (stopping_) return;
      id = lane_queue_.front();
      lane_queue_.pop_front();
      lane_ = Lane{.owner = id};
      released = lane_released_;
    }
    metrics_.SetLaneBusy(true);
    RunLane(id, released);
    metrics_.SetLaneBusy(false);
    absl::MutexLock lock(&mu_);
    lane_ = Lane{};
    lane_released_ = ledger_.clock().Now();
  }
}

namespace {

// A resume continues where the failure class says; completed stages are
// never re-run.
void ResetForResume(v1::Experiment& e) {
  switch (e.failure_class()) {
    case v1::LOAD_END_UNKNOWN:
      // The load generator finished and every record is stored: only
      // its end on the servers is unknown. Confirm the drain, keep the
      // load (found by the crash-point test at drain_confirm).
      if (FindStage(e, v1::STAGE_FORMAL_LOAD)->status() == v1::STAGE_STATUS_SUCCEEDED) {
        for (v1::StageName s : {v1::STAGE_DRAIN_CONFIRM, v1::STAGE_ANALYZE, v1::STAGE_DECIDE}) {
          ResetStage(*FindStage(e, s));
        }
        break;
      }
      [[fallthrough]];
    case v1::LOAD_INTERRUPTED:
      for (v1::StageName s :
           {v1::STAGE_FORMAL_LOAD, v1::STAGE_DRAIN_CONFIRM, v1::STAGE_ANALYZE, v1::STAGE_DECIDE}) {
        ResetStage(*FindStage(e, s));
      }
      break;
    default:
      for (v1::Stage& stage : *e.mutable_stages()) {
        if (stage.status() == v1::STAGE_STATUS_FAILED ||
            stage.status() == v1::STAGE_STATUS_RUNNING) {
          ResetStage(stage);
        }
      }
  }
}

}  // namespace

void StageRunner::Prepare(const std::string& id) {
  std::shared_ptr<std::atomic<bool>> cancel = CancelFlag(id);
  absl::StatusOr<v1::Experiment> started =
      Commit(id, [&](v1::Experiment& e) -> absl::StatusOr<EventText> {
        if (e.state() != v1::EXPERIMENT_STATE_QUEUED) {
          return absl::FailedPreconditionError("not queued");
        }
        EventText event{"state", "queued -> running", Durability::kOrdered};
        ResetForResume(e);
        if (e.failure_class() != v1::FAILURE_CLASS_UNSPECIFIED) {
          event.detail = absl::StrCat("resumed after ", v1::FailureClass_Name(e.failure_class()));
        }
        e.set_state(v1::EXPERIMENT_STATE_RUNNING);
        e.set_failure_class(v1::FAILURE_CLASS_UNSPECIFIED);
        e.set_resume_action("");
        e.set_blocker("preflight");
        return event;
      });
  if (!started.ok()) return;
  if (cancel->load()) return FinishCancelled(id);
  if (!started->plan().raw_records_from().empty() || started->has_external() ||
      (FindStage(*started, v1::STAGE_DRAIN_CONFIRM) != nullptr &&
       Done(FindStage(*started, v1::STAGE_DRAIN_CONFIRM)->status()))) {
    // Nothing left for the accelerators: re-analysis, an import, or a
    // resume after the raw data was complete.
    std::vector<v1::StageName> skipped;
    for (const StageInfo& info : StageTable()) {
      const v1::Stage* stage = FindStage(*started, info.name);
      if ((info.worker == Worker::kLane || info.name == v1::STAGE_PREFLIGHT) && stage != nullptr &&
          !Done(stage->status())) {
        skipped.push_back(info.name);
      }
    }
    if (!MarkStages(id, skipped, ledger_.clock().Now()).ok()) return;  // Latched.
    return RunAnalysis(id);
  }
  const v1::Stage* preflight = FindStage(*started, v1::STAGE_PREFLIGHT);
  if (preflight == nullptr || !Done(preflight->status())) {
    std::atomic<bool>& flag = *cancel;
    // Preflight starts where freeze ended: the handoff to this worker is its.
    const v1::Stage* freeze = FindStage(*started, v1::STAGE_FREEZE);
    absl::Time cursor = freeze != nullptr && freeze->has_ended_at() &&
                                started->failure_class() == v1::FAILURE_CLASS_UNSPECIFIED &&
                                preflight != nullptr && preflight->attempt() == 0
                            ? FromTimestamp(freeze->ended_at())
                            : ledger_.clock().Now();
    absl::Status status = RunStage(
        id, v1::STAGE_PREFLIGHT,
        [&](const v1::Experiment& e) {
          StageEnv env = Env(flag);
          return Preflight(env, e);
        },
        cursor);
    if (!status.ok()) return FailExperiment(id, v1::STAGE_PREFLIGHT, status);
  }
  // Only a busy lane is worth a write: an idle one takes the experiment now.
  if (Lane current = lane(); !current.owner.empty()) {
    SetBlocker(id, absl::StrCat("waiting for the accelerator lane: ", current.owner, " holds it"));
  }
  absl::MutexLock lock(&mu_);
  lane_queue_.push_back(id);
}

absl::Time StageRunner::LaneStart(const std::string& id, absl::Time released) {
  const absl::Time now = ledger_.clock().Now();
  // The first lane stage starts when the experiment could first have had the
  // lane: after its preflight and after the previous owner released it. Any
  // wait before that is queue wait, reported as such.
  absl::StatusOr<v1::Experiment> e = ledger_.store().GetExperiment(id);
  if (!e.ok()) return now;
  const v1::Stage* preflight = FindStage(*e, v1::STAGE_PREFLIGHT);
  if (preflight == nullptr || !preflight->has_ended_at()) return now;
  const absl::Time ready = std::max(FromTimestamp(preflight->ended_at()), released);
  metrics_.ObserveQueueWait(
      absl::ToDoubleSeconds(std::max(ready, now) - FromTimestamp(preflight->ended_at())));
  return std::min(ready, now);
}

void StageRunner::SetLaneStage(v1::StageName stage) {
  absl::MutexLock lock(&mu_);
  lane_.stage = stage;
}

void StageRunner::RunLane(const std::string& id, absl::Time released) {
  std::shared_ptr<std::atomic<bool>> cancel = CancelFlag(id);
  if (cancel->load()) return FinishCancelled(id);
  absl::Time cursor = LaneStart(id, released);
  if (absl::Status status = ForgetLostInstances(id); !status.ok()) {
    return FailExperiment(id, v1::STAGE_LAUNCH_PREFILL, status);
  }
  if (absl::Status status = Replan(id); !status.ok()) {
    return FailExperiment(id, v1::STAGE_LAUNCH_PREFILL, status);
  }
  StageEnv env = Env(*cancel);
  env.empty_caches = &empty_caches_;
  env.seed_start = &seed_start_;
  absl::Status formal_error;
  bool formal_started = false;
  Carried carried;
  for (const StageInfo& info : StageTable()) {
    if (info.worker != Worker::kLane || carried.Holds(info.name)) continue;
    absl::StatusOr<v1::Experiment> e = ledger_.store().GetExperiment(id);
    if (!e.ok()) return;
    const v1::Stage* stage = FindStage(*e, info.name);
    if (stage != nullptr && Done(stage->status())) continue;
    if (cancel->load() && !formal_started) {
      Flush(id, carried);
      return FinishCancelled(id);
    }
    SetLaneStage(info.name);
    if (stage != nullptr && Marked(stage->action())) {
      MarkStages(id, MarkedRun(*e, info.name), cursor, &carried).IgnoreError();  // Carried.
      continue;
    }
    if (info.phase == StagePhase::kLoad) {
      formal_started = true;
      formal_error = RunFormalLoad(id, env, *e, cursor, carried);
      continue;  // Whatever happened, the drain must be confirmed next.
    }
    absl::Status status = RunStage(
        id, info.name, [&](const v1::Experiment& x) { return info.body(env, x); }, cursor,
        &carried);
    if (status.ok()) continue;
    FailExperiment(id, info.name, status);
    if (info.phase == StagePhase::kDrain) HoldLaneUntilDrained(id);
    return;
  }
  Flush(id, carried);  // What the last preparing stages left, when no load followed.
  if (cancel->load()) return FinishCancelled(id);
  if (!formal_error.ok()) {
    // A side that died under the load is not hot any more: the summary and
    // the next plan must not count on it.
    if (absl::Status forgotten = ForgetLostInstances(id); !forgotten.ok()) {
      return FailExperiment(id, v1::STAGE_FORMAL_LOAD, forgotten);
    }
    return FailExperiment(id, v1::STAGE_FORMAL_LOAD, formal_error);
  }
  absl::MutexLock lock(&mu_);
  cpu_tasks_.push_back([this, id] { RunAnalysis(id); });
}

absl::Status StageRunner::RunFormalLoad(const std::string& id, StageEnv& env,
                                        const v1::Experiment& e, absl::Time& cursor,
                                        Carried& carried) {
  absl::Mutex progress_mu;
  absl::Time last_commit = absl::InfinitePast();
  bool first_recorded = false;
  // Progress is committed at most every progress_interval, but the first
  // formal request and the final figures always are.
  ProgressFn on_progress = [&](const v1::Progress& progress, bool final) {
    absl::MutexLock lock(&progress_mu);
    const absl::Time now = ledger_.clock().Now();
    const bool first = progress.has_first_formal_request_at() && !first_recorded;
    if (!final && !first && now - last_commit < options_.progress_interval) return;
    first_recorded = first_recorded || first;
    last_commit = now;
    Record(id, [&](v1::Experiment& x) -> absl::StatusOr<EventText> {
      *x.mutable_progress() = progress;
      return EventText{"progress",
                       absl::StrCat(progress.formal_requests_sent(), "/",
                                    progress.formal_requests_planned(), " sent"),
                       Durability::kOrdered};
    });
  };
  // The drain check reads the instances while the stage's start is synced,
  // which the first request waits for anyway (docs/design.md §6).
  std::future<DrainCheck> drained =
      std::async(std::launch::async, [&env, &e] { return CheckDrained(env, e); });
  // The attempt is the stage's own count: a load cut off before any of its
  // records were stored still used up its number.
  return RunStage(
      id, v1::STAGE_FORMAL_LOAD,
      [&](const v1::Experiment& x) {
        const v1::Stage* formal = FindStage(x, v1::STAGE_FORMAL_LOAD);
        return FormalLoad(env, x, formal != nullptr ? formal->attempt() : 1, on_progress,
                          drained.get());
      },
      cursor, &carried);
}

void StageRunner::HoldLaneUntilDrained(const std::string& id) {
  // The end of the load is unknown: keep the lane until it drains, so no new
  // load starts on top of it. Latched: nothing new will start on the lane,
  // and a restart's formal load confirms the drain before it sends.
  if (latched()) return;
  {
    absl::MutexLock lock(&mu_);
    lane_.holding_for_drain = true;
  }
  std::atomic<bool> never(false);
  StageEnv hold = Env(never);
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    if (absl::StatusOr<v1::Experiment> x = ledger_.store().GetExperiment(id);
        x.ok() && DrainConfirm(hold, *x).ok()) {
      SetBlocker(id, "instances drained; the lane is free (resume for a new formal attempt)");
      return;
    }
  }
}

void StageRunner::RunAnalysis(const std::string& id) {
  std::shared_ptr<std::atomic<bool>> cancel = CancelFlag(id);
  StageEnv env = Env(*cancel);
  // Analysis starts where the drain was confirmed (the lane's last stage).
  absl::Time cursor = ledger_.clock().Now();
  if (absl::StatusOr<v1::Experiment> e = ledger_.store().GetExperiment(id); e.ok()) {
    const v1::Stage* drain = FindStage(*e, v1::STAGE_DRAIN_CONFIRM);
    if (drain != nullptr && drain->status() == v1::STAGE_STATUS_SUCCEEDED &&
        drain->has_ended_at() && FromTimestamp(drain->ended_at()) < cursor) {
      cursor = FromTimestamp(drain->ended_at());
    }
  }
  v1::Result result;
  absl::Status status = RunStage(
      id, v1::STAGE_ANALYZE,
      [&](const v1::Experiment& e) -> absl::StatusOr<Counters> {
        SERVELAB_ASSIGN_OR_RETURN(result, AnalyzeStored(env, e));
        return Counters{
            {"requests_completed", static_cast<double>(result.whole().requests_completed())},
            {"requests_failed", static_cast<double>(result.whole().requests_failed())}};
      },
      cursor);
  if (!status.ok()) return FailExperiment(id, v1::STAGE_ANALYZE, status);
  std::optional<v1::Decision> decision;
  status = RunStage(
      id, v1::STAGE_DECIDE,
      [&](const v1::Experiment& e) -> absl::StatusOr<Counters> {
        SERVELAB_ASSIGN_OR_RETURN(decision, DecideAgainstBaseline(env, e, result));
        if (!decision.has_value()) return Counters{{"has_baseline", 0}};
        return Counters{{"has_baseline", 1}, {"delta_fraction", decision->delta_fraction()}};
      },
      cursor);
  if (!status.ok()) return FailExperiment(id, v1::STAGE_DECIDE, status);
  if (decision.has_value()) *result.mutable_decision() = *decision;
  Record(id, [&](v1::Experiment& e) -> absl::StatusOr<EventText> {
    *e.mutable_result() = result;
    e.set_state(v1::EXPERIMENT_STATE_SUCCEEDED);
    e.set_blocker("");
    std::string verdict = decision.has_value()
                              ? absl::StrCat("; ", VerdictLabel(decision->verdict()), " vs ",
                                             decision->baseline_experiment_id())
                              : "; first of its scenario";
    return EventText{"state", absl::StrCat("running -> succeeded", verdict)};
  });
  absl::MutexLock lock(&mu_);
  cancel_.erase(id);
}

absl::Status StageRunner::RunStage(
    const std::string& id, v1::StageName name,
    const std::function<absl::StatusOr<Counters>(const v1::Experiment&)>& body, absl::Time& cursor,
    Carried* carried) {
  const absl::Time start = cursor;
  Carried none;
  SERVELAB_ASSIGN_OR_RETURN(
      v1::Experiment started,
      CommitWith(id, carried != nullptr ? *carried : none,
                 [&](v1::Experiment& e) -> absl::StatusOr<EventText> {
                   v1::Stage& stage = *FindStage(e, name);
                   stage.set_status(v1::STAGE_STATUS_RUNNING);
                   stage.set_attempt(stage.attempt() + 1);
                   *stage.mutable_started_at() = ToTimestamp(start);
                   stage.clear_ended_at();
                   stage.clear_error();
                   stage.clear_counters();
                   e.set_state(v1::EXPERIMENT_STATE_RUNNING);
                   // Preflight keeps its blocker ("preflight"); lane and analysis
                   // stages are the fact the blocker would otherwise repeat.
                   const StageInfo& info = StageInfoOf(name);
                   if (info.worker == Worker::kLane || info.phase == StagePhase::kAnalyze)
                     e.set_blocker("");
                   return EventText{
                       "stage",
                       absl::StrCat(StageLabel(name), " running (attempt ", stage.attempt(), ")"),
                       StageWriteDurability(name)};
                 }));
  CrashPoint(absl::StrCat("stage.", StageLabel(name), ".begin"));
  absl::StatusOr<Counters> counters = body(started);
  CrashPoint(absl::StrCat("stage.", StageLabel(name), ".end"));
  const absl::Time end = ledger_.clock().Now();
  // By value: a carried end is written after this call returns.
  Ledger::Mutation finish = [this, name, end,
                             counters](v1::Experiment& e) -> absl::StatusOr<EventText> {
    v1::Stage& stage = *FindStage(e, name);
    *stage.mutable_ended_at() = ToTimestamp(end);
    if (counters.ok()) {
      stage.set_status(v1::STAGE_STATUS_SUCCEEDED);
      for (const auto& [key, value] : *counters) (*stage.mutable_counters())[key] = value;
      RecordLaunchCommand(ledger_.store(), stage);
    } else {
      stage.set_status(v1::STAGE_STATUS_FAILED);
      stage.set_error(std::string(counters.status().message()));
    }
    return EventText{"stage",
                     absl::StrCat(StageLabel(name), counters.ok() ? " succeeded" : " failed: ",
                                  counters.ok() ? "" : counters.status().message()),
                     StageWriteDurability(name)};
  };
  if (carried != nullptr && counters.ok() && StageInfoOf(name).phase == StagePhase::kPrepare) {
    carried->writes.push_back(std::move(finish));
    carried->ended.push_back(name);
  } else {
    Record(id, finish);
  }
  metrics_.ObserveStage(StageLabel(name), "run", absl::ToDoubleSeconds(end - start));
  cursor = end;
  return counters.status();
}

absl::Status StageRunner::MarkStages(const std::string& id, const std::vector<v1::StageName>& names,
                                     absl::Time at, Carried* carried) {
  if (names.empty()) return absl::OkStatus();
  auto marked = std::make_shared<std::vector<std::pair<std::string, v1::StageStatus>>>();
  Ledger::Mutation mark = [names, at, marked](v1::Experiment& e) -> absl::StatusOr<EventText> {
    marked->clear();
    std::string detail;
    for (v1::StageName name : names) {
      v1::Stage& stage = *FindStage(e, name);
      const v1::StageStatus status = stage.action() == v1::STAGE_ACTION_REUSE
                                         ? v1::STAGE_STATUS_REUSED
                                         : v1::STAGE_STATUS_SKIPPED;
      stage.set_status(status);
      *stage.mutable_started_at() = ToTimestamp(at);
      *stage.mutable_ended_at() = ToTimestamp(at);
      marked->emplace_back(StageLabel(name), status);
      absl::StrAppend(
          &detail, detail.empty() ? "" : "; ", StageLabel(name),
          status == v1::STAGE_STATUS_REUSED ? " reused: " : " skipped: ", stage.reason());
    }
    return EventText{"stage", detail, Durability::kOrdered};
  };
  auto observe = [this, marked] {
    for (const auto& [label, status] : *marked) {
      metrics_.ObserveStage(label, status == v1::STAGE_STATUS_REUSED ? "reuse" : "skip", 0);
      if (status == v1::STAGE_STATUS_REUSED) metrics_.CountStageReuse(label);
    }
  };
  if (carried != nullptr) {
    carried->writes.push_back(std::move(mark));
    carried->ended.insert(carried->ended.end(), names.begin(), names.end());
    carried->on_written.push_back(std::move(observe));
    return absl::OkStatus();
  }
  absl::Status result = Commit(id, mark).status();
  observe();
  return result;
}

void StageRunner::FailExperiment(const std::string& id, v1::StageName name,
                                 const absl::Status& error) {
  Record(id, [&](v1::Experiment& e) -> absl::StatusOr<EventText> {
    const v1::Stage* warmup = FindStage(static_cast<const v1::Experiment&>(e), v1::STAGE_WARMUP);
    const bool warm = warmup != nullptr && Done(warmup->status());
    const v1::FailureClass failure_class = ClassifyFailure(name, warm);
    e.set_state(v1::EXPERIMENT_STATE_FAILED);
    e.set_failure_class(failure_class);
    e.set_resume_action(ResumeAction(failure_class, name));
    e.set_blocker(absl::StrCat(StageLabel(name), " failed: ", error.message()));
    return EventText{"failed", absl::StrCat(v1::FailureClass_Name(failure_class), " at ",
                                            StageLabel(name), ": ", error.message())};
  });
  absl::MutexLock lock(&mu_);
  cancel_.erase(id);
}

void StageRunner::FinishCancelled(const std::string& id) {
  Record(id, [&](v1::Experiment& e) -> absl::StatusOr<EventText> {
    if (IsFinal(e.state())) return absl::FailedPreconditionError("already final");
    const std::string before = StateLabel(e.state());
    e.set_state(v1::EXPERIMENT_STATE_CANCELLED);
    e.set_blocker("");
    return EventText{"cancelled", absl::StrCat(before, " -> cancelled")};
  });
  absl::MutexLock lock(&mu_);
  cancel_.erase(id);
}

void StageRunner::SetBlocker(const std::string& id, const std::string& blocker) {
  Record(id, [&](v1::Experiment& e) -> absl::StatusOr<EventText> {
    e.set_blocker(blocker);
    return EventText{"blocker", blocker, Durability::kOrdered};
  });
}

namespace {

// Re-plans `e`'s lane stages against `hot`, what runs now; what changed,
// for the event ("" when no action did).
std::string ApplyLanePlan(v1::Experiment& e, const std::optional<HotDeployment>& hot) {
  // The plan made at submit compared with what ran then; the lane compares
  // with what runs now (an experiment ahead in the queue may have changed it).
  v1::Plan plan = MakePlan({.spec = e.spec(), .hot = hot});
  std::string changed;
  // A launch done earlier is redone when the plan against what runs now
  // launches its side (its instance is gone or different; the router
  // follows a relaunched side), and so is every preparing stage after it: a
  // new process is neither warm nor verified.
  bool relaunching = false;
  for (const v1::PlannedStage& planned : plan.stages()) {
    if (!IsLaneStage(planned.stage())) continue;
    v1::Stage& stage = *FindStage(e, planned.stage());
    const StageInfo& info = StageInfoOf(planned.stage());
    bool stale = false;
    if (Done(stage.status()) && info.launches != v1::SIDE_UNSPECIFIED) {
      stale = planned.action() == v1::STAGE_ACTION_RUN;
      relaunching = relaunching || stale;
    } else if (Done(stage.status())) {
      stale = relaunching && info.phase == StagePhase::kPrepare;
    }
    if (Done(stage.status()) && !stale) continue;
    if (stale) ResetStage(stage);
    if (stage.action() != planned.action()) {
      absl::StrAppend(&changed, changed.empty() ? "" : ", ", StageLabel(planned.stage()), " ",
                      ActionLabel(stage.action()), " -> ", ActionLabel(planned.action()));
    }
    stage.set_action(planned.action());
    stage.set_reason(planned.reason());
  }
  *plan.mutable_predicted_preparation() = e.plan().predicted_preparation();
  *e.mutable_plan() = plan;
  return changed;
}

}  // namespace

absl::Status StageRunner::Replan(const std::string& id) {
  SERVELAB_ASSIGN_OR_RETURN(std::optional<HotDeployment> hot, ReadHotDeployment(ledger_.store()));
  // Usually nothing ran in between and the plan stands: the mutation then
  // declines, nothing is written, and the lane's first commit comes one
  // sooner.
  bool stands = false;
  absl::StatusOr<v1::Experiment> written =
      Commit(id, [&](v1::Experiment& e) -> absl::StatusOr<EventText> {
        const v1::Experiment before = e;
        const std::string changed = ApplyLanePlan(e, hot);
        stands = google::protobuf::util::MessageDifferencer::Equals(before, e);
        if (stands) return absl::FailedPreconditionError("the lane plan stands");
        return EventText{"plan",
                         changed.empty() ? "lane plan updated, no action changed"
                                         : absl::StrCat("re-planned at lane start: ", changed),
                         Durability::kOrdered};
      });
  return stands ? absl::OkStatus() : written.status();
}

absl::Status StageRunner::ForgetLostInstances(const std::string& id) {
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::ServingInstance> instances,
                            ledger_.store().ListInstances());
  for (const v1::ServingInstance& instance : instances) {
    // A crash, an OOM kill, a step cancelled from outside: reusing it would
    // fail the first request. Cannot tell (Slurm unreachable): keep it.
    absl::StatusOr<bool> alive = instances_.Alive(instance);
    if (!alive.ok() || *alive) continue;
    SERVELAB_RETURN_IF_ERROR(instances_.Stop(instance, options_.stop_grace));
    SERVELAB_RETURN_IF_ERROR(ledger_.store().RemoveInstance(instance.side()));
    Record(id, [&](v1::Experiment&) -> absl::StatusOr<EventText> {
      return EventText{
          "instance_lost",
          absl::StrCat(SideLabel(instance.side()), " instance (", InstancePlace(instance),
                       ") is no longer running: its side is launched again")};
    });
  }
  return absl::OkStatus();
}

absl::Status StageRunner::Recover() {
  Store& store = ledger_.store();
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::ServingInstance> instances, store.ListInstances());
  for (const v1::ServingInstance& instance : instances) {
    // Same pid and start time (or Slurm step): the very process we launched,
    // still serving. A side with several DP ranks is alive only whole: the
    // ranks that survived a partial crash are stopped, never left running
    // unowned. Cannot tell (Slurm unreachable): keep it for now.
    absl::StatusOr<bool> alive = instances_.Alive(instance);
    if (!alive.ok()) {
      Record(instance.experiment_id(), [&](v1::Experiment&) -> absl::StatusOr<EventText> {
        return EventText{
            "instance_unknown",
            absl::StrCat("after a restart: cannot tell whether the ", SideLabel(instance.side()),
                         " instance (", InstancePlace(instance), ") still runs (",
                         alive.status().message(), "); kept")};
      });
      continue;
    }
    if (!*alive) {
      SERVELAB_RETURN_IF_ERROR(instances_.Stop(instance, options_.stop_grace));
      SERVELAB_RETURN_IF_ERROR(store.RemoveInstance(instance.side()));
    }
  }
  // Started but never recorded (the daemon died right after the spawn):
  // found by the owner marker in its environment, never left unowned.
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::ServingInstance> recorded, store.ListInstances());
  const std::vector<int> orphans = instances_.StopUnrecorded(recorded, options_.stop_grace);
  // Only what was current at the crash is read, not the whole history:
  // the interrupted experiments first, then the queue in its order.
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::Experiment> running,
                            store.ListExperiments({.state = v1::EXPERIMENT_STATE_RUNNING}));
  for (const v1::Experiment& experiment : running) {
    // Interrupted by the restart: classify by how far it got. Never re-send
    // a formal load by itself; resume decides.
    v1::StageName interrupted = v1::STAGE_PREFLIGHT;
    for (const v1::Stage& stage : experiment.stages()) {
      if (!Done(stage.status())) {
        interrupted = stage.name();
        break;
      }
    }
    Record(experiment.id(), [&](v1::Experiment& e) -> absl::StatusOr<EventText> {
      v1::Stage& stage = *FindStage(e, interrupted);
      if (stage.status() == v1::STAGE_STATUS_RUNNING) {
        stage.set_status(v1::STAGE_STATUS_FAILED);
        stage.set_error("the daemon restarted during this stage");
        *stage.mutable_ended_at() = ToTimestamp(ledger_.clock().Now());
      }
      const v1::Stage* warmup = FindStage(static_cast<const v1::Experiment&>(e), v1::STAGE_WARMUP);
      const v1::FailureClass failure_class =
          ClassifyFailure(interrupted, warmup != nullptr && Done(warmup->status()));
      e.set_state(v1::EXPERIMENT_STATE_FAILED);
      e.set_failure_class(failure_class);
      e.set_resume_action(ResumeAction(failure_class, interrupted));
      e.set_blocker(absl::StrCat("the daemon restarted during ", StageLabel(interrupted)));
      return EventText{
          "recovered",
          absl::StrCat(v1::FailureClass_Name(failure_class),
                       ": interrupted by a daemon restart during ", StageLabel(interrupted),
                       orphans.empty() ? ""
                                       : absl::StrCat("; stopped ", orphans.size(),
                                                      " process(es) it had started but not "
                                                      "recorded: pid ",
                                                      absl::StrJoin(orphans, ", ")))};
    });
  }
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::Experiment> queued,
                            store.ListExperiments({.state = v1::EXPERIMENT_STATE_QUEUED}));
  for (const v1::Experiment& experiment : queued) Enqueue(experiment.id());
  return absl::OkStatus();
}

}  // namespace servelab::core
