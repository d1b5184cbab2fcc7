#include "client/output.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "daemon/core/spec/scope.h"

namespace servelab::client {
namespace {

using google::protobuf::util::TimeUtil;

absl::Time ToTime(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

bool IsSet(const google::protobuf::Timestamp& ts) { return ts.seconds() != 0 || ts.nanos() != 0; }

std::string FormatTimestamp(const google::protobuf::Timestamp& ts) {
  if (!IsSet(ts)) return "-";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", ToTime(ts), absl::UTCTimeZone());
}

// Milliseconds matter below a second (a reused deployment starts its formal
// load within a few); whole seconds above a minute.
std::string FormatAge(absl::Duration d) {
  if (d <= absl::ZeroDuration()) return "0s";
  if (d < absl::Seconds(1)) return absl::StrFormat("%.1fms", absl::ToDoubleMilliseconds(d));
  if (d < absl::Minutes(1)) return absl::StrFormat("%.2fs", absl::ToDoubleSeconds(d));
  return absl::FormatDuration(absl::Trunc(d, absl::Seconds(1)));
}

absl::Duration ToDuration(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

std::string StripPrefix(const std::string& name, absl::string_view prefix) {
  absl::string_view view = name;
  absl::ConsumePrefix(&view, prefix);
  return std::string(view);
}

// The running stage, "stage (for 1m3s)"; otherwise what the state implies.
std::string CurrentStage(const v1::Experiment& e, absl::Time now) {
  for (const v1::Stage& stage : e.stages()) {
    if (stage.status() == v1::STAGE_STATUS_RUNNING) {
      std::string label = StageLabel(stage.name());
      if (stage.attempt() > 1) absl::StrAppend(&label, " attempt ", stage.attempt());
      if (IsSet(stage.started_at())) {
        absl::StrAppend(&label, " (for ", FormatAge(now - ToTime(stage.started_at())), ")");
      }
      return label;
    }
  }
  if (e.state() == v1::EXPERIMENT_STATE_QUEUED) {
    std::string label = "none yet (queued";
    if (IsSet(e.submitted_at())) {
      absl::StrAppend(&label, " for ", FormatAge(now - ToTime(e.submitted_at())));
    }
    return label + ")";
  }
  // The last stage that ran tells where a finished or paused experiment stopped.
  for (auto it = e.stages().rbegin(); it != e.stages().rend(); ++it) {
    if (IsSet(it->ended_at())) {
      return absl::StrCat("none (last: ", StageLabel(it->name()), " ",
                          StageStatusLabel(it->status()), ")");
    }
  }
  return "none";
}

std::string FormatProgress(const v1::Progress& p) {
  return absl::StrCat(p.formal_requests_sent(), " sent / ", p.formal_requests_planned(),
                      " planned (", p.formal_requests_completed(), " completed, ",
                      p.formal_requests_failed(), " failed)");
}

std::string FormatValue(const std::string& json) { return json.empty() ? "(unset)" : json; }

void AppendRow(std::string* out, absl::string_view label, absl::string_view value) {
  absl::StrAppend(out, absl::StrFormat("%-17s %s\n", absl::StrCat(label, ":"), value));
}

// Each changed field against the base, with its invalidation scope.
void AppendChanges(const v1::Experiment& e, std::string& out) {
  if (e.changes().empty()) {
    AppendRow(&out, "changes", e.base_id().empty() ? "-" : "none");
  } else {
    AppendRow(&out, "changes", absl::StrCat(e.changes_size()));
    for (const v1::FieldChange& change : e.changes()) {
      absl::StrAppend(&out, "  ", change.path(), ": ", FormatValue(change.old_value()), " → ",
                      FormatValue(change.new_value()));
      if (change.scope() != v1::SCOPE_UNSPECIFIED) {
        absl::StrAppend(&out, "  [", StripPrefix(v1::Scope_Name(change.scope()), "SCOPE_"), "]");
      }
      absl::StrAppend(&out, "\n");
    }
  }
}

// One line per planned stage: action, status (with its duration) and reason.
void AppendPlan(const v1::Experiment& e, std::string& out) {
  std::string plan_header = "plan";
  if (!e.plan().planned_against().empty()) {
    absl::StrAppend(&plan_header, " (against hot ", e.plan().planned_against(), ")");
  }
  if (e.plan().has_predicted_preparation() && e.plan().predicted_preparation().seconds() > 0) {
    absl::StrAppend(&plan_header, ", predicted preparation ",
                    FormatAge(ToDuration(e.plan().predicted_preparation())));
  }
  absl::StrAppend(&out, plan_header, ":\n");
  std::map<int, const v1::Stage*> stage_rows;
  for (const v1::Stage& stage : e.stages()) stage_rows[stage.name()] = &stage;
  if (e.plan().stages().empty()) absl::StrAppend(&out, "  (empty)\n");
  for (const v1::PlannedStage& planned : e.plan().stages()) {
    std::string status;
    auto row = stage_rows.find(planned.stage());
    if (row != stage_rows.end() && row->second->status() != v1::STAGE_STATUS_UNSPECIFIED) {
      status = StageStatusLabel(row->second->status());
      if (IsSet(row->second->started_at()) && IsSet(row->second->ended_at())) {
        absl::StrAppend(
            &status, " ",
            FormatAge(ToTime(row->second->ended_at()) - ToTime(row->second->started_at())));
      }
    }
    absl::StrAppend(&out, absl::StrFormat("  %-14s %-6s %-14s %s\n", StageLabel(planned.stage()),
                                          ActionLabel(planned.action()), status, planned.reason()));
    if (row != stage_rows.end() && !row->second->error().empty()) {
      absl::StrAppend(&out, "    error: ", row->second->error(), "\n");
    }
  }
}

// The launch commands `servelab plan` rendered, one block per side.
void AppendCommands(const v1::Experiment& e, std::string& out) {
  if (!e.plan().commands().empty()) {
    absl::StrAppend(&out,
                    "commands (rendered by the launch code; ports left 0 in the spec "
                    "are picked again at launch):\n");
    for (const v1::RenderedCommand& c : e.plan().commands()) {
      const std::string side = SideLabel(c.side());
      if (!c.error().empty()) {
        absl::StrAppend(&out, "  ", side, ": cannot render: ", c.error(), "\n");
        continue;
      }
      absl::StrAppend(&out, "  ", side, ":\n");
      for (absl::string_view line : absl::StrSplit(c.text(), '\n', absl::SkipEmpty())) {
        absl::StrAppend(&out, "    ", line, "\n");
      }
    }
  }
}

// "keep (+1.23% vs exp-1)"; with repeated runs the spread and run counts:
// "inconclusive (+0.81% ± 0.60% vs exp-1, 3 vs 3 runs)".
std::string DecisionText(const v1::Decision& d) {
  if (d.repeats() > 1 || d.baseline_repeats() > 1) {
    return absl::StrFormat("%s (%+.2f%% \u00b1 %.2f%% vs %s, %d vs %d runs)",
                           VerdictLabel(d.verdict()), d.delta_fraction() * 100,
                           d.delta_spread() * 100, d.baseline_experiment_id(),
                           std::max(1, d.repeats()), std::max(1, d.baseline_repeats()));
  }
  return absl::StrFormat("%s (%+.2f%% vs %s)", VerdictLabel(d.verdict()), d.delta_fraction() * 100,
                         d.baseline_experiment_id());
}

// A counter of the formal load's stage; nullptr when it has none.
const double* FormalCounter(const v1::Experiment& e, const std::string& name) {
  for (const v1::Stage& stage : e.stages()) {
    auto it = stage.counters().find(name);
    if (stage.name() == v1::STAGE_FORMAL_LOAD && it != stage.counters().end()) return &it->second;
  }
  return nullptr;
}

// The prefix-cache hit ratio from prefill's counters (the formal load's
// achieved_hit_ratio), and the client's own figure unless it is decode's.
void AppendPrefixCache(const v1::Experiment& e, std::string& out) {
  const double* ratio = FormalCounter(e, "achieved_hit_ratio");
  if (ratio == nullptr) return;
  absl::StrAppend(&out,
                  absl::StrFormat("  prefix cache: %.4f hit ratio (prefill's counters)", *ratio));
  const v1::Result& r = e.result();
  if (r.cached_tokens_reported() && !r.cached_tokens_from_decode()) {
    absl::StrAppend(&out, absl::StrFormat(", %.4f (client usage)", r.prefix_cache_hit_ratio()));
  }
  absl::StrAppend(&out, "\n");
}

// How long first tokens waited in the daemon's sockets before it read them:
// not in TTFT (the kernel's stamp is), but large means its core was busy.
void AppendClientReadLag(const v1::Experiment& e, std::string& out) {
  const double* lag = FormalCounter(e, "client_read_lag_p99_seconds");
  if (lag == nullptr) return;
  absl::StrAppend(&out, absl::StrFormat("  client read lag: p99 %.3f ms (first tokens waited in "
                                        "servelabd's sockets; not in TTFT)\n",
                                        *lag * 1e3));
}

// Throughput per window and the decision against the baseline.
void AppendResult(const v1::Experiment& e, std::string& out) {
  if (e.has_result() && e.result().has_whole()) {
    absl::StrAppend(&out, "result:\n");
    auto window = [&](absl::string_view name, const v1::WindowResult& w) {
      absl::StrAppend(
          &out, absl::StrFormat("  %-6s %.4f output tok/s per device, %.4f req/s, %.1fs\n", name,
                                w.output_tokens_per_second_per_device(), w.request_throughput(),
                                w.duration_seconds()));
    };
    window("whole", e.result().whole());
    if (e.result().has_steady()) window("steady", e.result().steady());
    for (const v1::RepeatResult& run : e.result().repeats()) {
      absl::StrAppend(
          &out, absl::StrFormat("  run %d: %s = %.4f (%d completed, %d failed)\n", run.repeat(),
                                e.spec().analysis().decision().metric(), run.value(),
                                run.requests_completed(), run.requests_failed()));
    }
    AppendPrefixCache(e, out);
    AppendClientReadLag(e, out);
    if (e.result().has_decision() && e.result().decision().verdict() != v1::VERDICT_UNSPECIFIED) {
      absl::StrAppend(&out, "  decision: ", DecisionText(e.result().decision()), "\n");
    }
  }
}

}  // namespace

std::string ToJson(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  options.add_whitespace = pretty;
  std::string json;
  // Printing a well-formed message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!pretty) json.erase(std::remove(json.begin(), json.end(), '\n'), json.end());
  return json;
}

std::string FormatExperiment(const v1::Experiment& e, absl::Time now) {
  std::string out;
  std::string title = e.id().empty() ? "(not stored: plan only)" : e.id();
  absl::StrAppend(&out, title, "  ", StateLabel(e.state()), "  scenario ",
                  e.spec().scenario().empty() ? "-" : e.spec().scenario(), "\n");
  AppendRow(&out, "state", StateLabel(e.state()));
  AppendRow(&out, "stage", CurrentStage(e, now));
  AppendRow(&out, "formal requests", FormatProgress(e.progress()));
  if (e.has_external()) {
    const v1::ExternalSource& x = e.external();
    AppendRow(&out, "imported",
              absl::StrCat("measured by ", x.tool(),
                           x.tool_version().empty() ? "" : absl::StrCat(" ", x.tool_version()),
                           x.file_name().empty() ? "" : absl::StrCat(" (", x.file_name(), ")"),
                           "; servelab sent no request"));
  } else if (IsSet(e.progress().first_formal_request_at())) {
    std::string first = FormatTimestamp(e.progress().first_formal_request_at());
    if (e.progress().has_first_formal_request_delay()) {
      absl::StrAppend(&first, " (",
                      FormatAge(ToDuration(e.progress().first_formal_request_delay())),
                      " after submit)");
    }
    AppendRow(&out, "first request", first);
  } else {
    AppendRow(&out, "first request", "not sent yet");
  }
  AppendRow(&out, "blocker", e.blocker().empty() ? "none" : e.blocker());
  AppendRow(&out, "adds launch", e.plan().adds_launch() ? "yes" : "no");
  AppendRow(&out, "adds warmup", e.plan().adds_warmup() ? "yes" : "no");
  AppendRow(&out, "base", e.base_id().empty() ? "none" : e.base_id());
  AppendChanges(e, out);
  if (e.state() == v1::EXPERIMENT_STATE_FAILED ||
      e.failure_class() != v1::FAILURE_CLASS_UNSPECIFIED) {
    AppendRow(&out, "failure class", v1::FailureClass_Name(e.failure_class()));
  }
  if (!e.resume_action().empty()) AppendRow(&out, "resume", e.resume_action());

  AppendPlan(e, out);
  AppendCommands(e, out);
  AppendResult(e, out);
  if (!e.spec_sha256().empty()) AppendRow(&out, "spec sha256", e.spec_sha256());
  AppendRow(&out, "submitted", FormatTimestamp(e.submitted_at()));
  return out;
}

namespace {

// One row of a comparison: a label, then one cell per experiment.
void AppendCompareRow(std::string& out, absl::string_view label,
                      const std::vector<std::string>& cells) {
  absl::StrAppend(&out, absl::StrFormat("  %-34s", label));
  for (const std::string& cell : cells) absl::StrAppend(&out, absl::StrFormat(" %-22s", cell));
  absl::StrAppend(&out, "\n");
}

// Each changed path against the first experiment's spec, with every
// experiment's value (the first one's where it did not change).
void AppendSpecDifferences(const std::vector<v1::Experiment>& experiments, std::string& out) {
  std::map<std::string, std::vector<std::string>> rows;
  for (size_t i = 1; i < experiments.size(); ++i) {
    for (const v1::FieldChange& change :
         core::spec::DiffSpecs(experiments[0].spec(), experiments[i].spec())) {
      std::vector<std::string>& row = rows[change.path()];
      if (row.empty()) row.assign(experiments.size(), FormatValue(change.old_value()));
      row[i] = FormatValue(change.new_value());
    }
  }
  absl::StrAppend(&out, "frozen-spec differences (against ", experiments[0].id(), "):\n");
  if (rows.empty()) absl::StrAppend(&out, "  none: the frozen specs are equal\n");
  for (const auto& [path, cells] : rows) AppendCompareRow(out, path, cells);
}

void AppendResults(const std::vector<v1::Experiment>& experiments, std::string& out) {
  absl::StrAppend(&out, "results (whole / steady window):\n");
  auto row = [&](absl::string_view label, auto value) {
    std::vector<std::string> cells;
    for (const v1::Experiment& e : experiments) {
      cells.push_back(e.has_result() ? absl::StrFormat("%.4g / %.4g", value(e.result().whole()),
                                                       value(e.result().steady()))
                                     : "-");
    }
    AppendCompareRow(out, label, cells);
  };
  row("output tok/s per device",
      [](const v1::WindowResult& w) { return w.output_tokens_per_second_per_device(); });
  row("requests/s", [](const v1::WindowResult& w) { return w.request_throughput(); });
  row("ttft p99 ms", [](const v1::WindowResult& w) { return w.ttft().p99() * 1000; });
  row("tpot p99 ms", [](const v1::WindowResult& w) { return w.tpot().p99() * 1000; });
  std::vector<std::string> decisions;
  for (const v1::Experiment& e : experiments) {
    const v1::Decision& d = e.result().decision();
    decisions.push_back(d.verdict() == v1::VERDICT_UNSPECIFIED ? "-" : DecisionText(d));
  }
  AppendCompareRow(out, "decision", decisions);
}

}  // namespace

std::string FormatComparison(const std::vector<v1::Experiment>& experiments) {
  std::string out;
  if (experiments.empty()) return out;
  std::vector<std::string> ids, states, scenarios, hashes;
  for (const v1::Experiment& e : experiments) {
    ids.push_back(e.id());
    states.push_back(StateLabel(e.state()));
    scenarios.push_back(e.spec().scenario().empty() ? "-" : e.spec().scenario());
    hashes.push_back(e.spec_sha256().substr(0, 12));
  }
  AppendCompareRow(out, "", ids);
  AppendCompareRow(out, "state", states);
  AppendCompareRow(out, "scenario", scenarios);
  AppendCompareRow(out, "spec sha256", hashes);
  AppendSpecDifferences(experiments, out);
  AppendResults(experiments, out);
  return out;
}

std::string FormatExperimentList(const v1::ListExperimentsResponse& list) {
  std::string out = absl::StrFormat("%-10s %-10s %-20s %-10s %s\n", "ID", "STATE", "SCENARIO",
                                    "BASE", "SUBMITTED");
  for (const v1::Experiment& e : list.experiments()) {
    absl::StrAppend(&out,
                    absl::StrFormat("%-10s %-10s %-20s %-10s %s\n", e.id(), StateLabel(e.state()),
                                    e.spec().scenario().empty() ? "-" : e.spec().scenario(),
                                    e.base_id().empty() ? "-" : e.base_id(),
                                    FormatTimestamp(e.submitted_at())));
  }
  return out;
}

std::string FormatWatchLine(const v1::Experiment& e, absl::Time now) {
  std::string line = absl::StrCat(
      absl::FormatTime("%H:%M:%S", now, absl::LocalTimeZone()), " ", e.id(), " ",
      StateLabel(e.state()), " stage=", CurrentStage(e, now),
      " sent=", e.progress().formal_requests_sent(), "/", e.progress().formal_requests_planned(),
      " completed=", e.progress().formal_requests_completed(),
      " failed=", e.progress().formal_requests_failed(),
      " blocker=", e.blocker().empty() ? "none" : e.blocker());
  if (e.failure_class() != v1::FAILURE_CLASS_UNSPECIFIED) {
    absl::StrAppend(&line, " failure=", v1::FailureClass_Name(e.failure_class()));
  }
  return line + "\n";
}

std::string FormatLiveProgress(const v1::Experiment& e, absl::Time now) {
  const v1::Progress& p = e.progress();
  std::string eta = "-";
  const int64_t done = p.formal_requests_completed() + p.formal_requests_failed();
  if (IsFinal(e.state())) {
    eta = "0s";
  } else if (IsSet(p.first_formal_request_at()) && done > 0) {
    const absl::Duration formal = now - ToTime(p.first_formal_request_at());
    const int64_t left = std::max<int64_t>(0, p.formal_requests_planned() - done);
    eta = FormatAge(absl::Seconds(std::ceil(absl::ToDoubleSeconds(formal) * left / done)));
  }
  const std::string elapsed =
      IsSet(e.submitted_at()) ? FormatAge(now - ToTime(e.submitted_at())) : "-";
  return absl::StrCat(e.id(), " ", StateLabel(e.state()), " ", CurrentStage(e, now), " ",
                      p.formal_requests_sent(), "/", p.formal_requests_planned(), " sent, ",
                      p.formal_requests_completed(), " completed, ", p.formal_requests_failed(),
                      " failed, elapsed ", elapsed, ", eta ", eta);
}

std::string FormatHotDeployment(const v1::HotDeployment& hot) {
  std::string out;
  if (hot.experiment_id().empty()) {
    AppendRow(&out, "hot deployment", "none (the devices are free)");
    return out;
  }
  std::string text = absl::StrCat("spec of ", hot.experiment_id());
  if (IsSet(hot.warm_since()))
    absl::StrAppend(&text, ", warm since ", FormatTimestamp(hot.warm_since()));
  if (!hot.cache_state().empty()) absl::StrAppend(&text, ", cache ", hot.cache_state());
  AppendRow(&out, "hot deployment", text);
  for (const v1::ServingInstance& instance : hot.instances()) {
    absl::StrAppend(
        &out, absl::StrFormat("  %-8s %s, port %d, %d process(es), launched by %s\n",
                              SideLabel(instance.side()), InstancePlace(instance), instance.port(),
                              1 + instance.extra_ranks_size(), instance.experiment_id()));
  }
  return out;
}

std::string FormatSummary(const v1::Summary& s) {
  std::string out;
  // Not serving: recovering, or refusing work since a ledger write failed;
  // the next step says which.
  AppendRow(&out, "daemon",
            absl::StrCat(s.serving() ? "serving" : "NOT serving (see next step)",
                         s.paused() ? ", paused" : ""));
  AppendRow(&out, "lane",
            s.lane_owner().empty()
                ? "idle"
                : absl::StrCat(s.lane_owner(), " at ", StageLabel(s.lane_stage())));
  AppendRow(&out, "queue",
            s.queue().empty()
                ? "empty"
                : absl::StrCat(absl::StrJoin(s.queue(), ", "), " (", s.queue_size(), ")"));
  absl::StrAppend(&out, FormatHotDeployment(s.hot_deployment()));
  if (s.best().empty()) {
    AppendRow(&out, "best", "none yet");
  } else {
    absl::StrAppend(&out, "best:\n");
    for (const v1::ScenarioBest& best : s.best()) {
      absl::StrAppend(&out, absl::StrFormat("  %-20s %-10s %s = %.4f\n", best.scenario(),
                                            best.experiment_id(), best.metric(), best.value()));
    }
  }
  if (s.recent_failures().empty()) {
    AppendRow(&out, "recent failures", "none");
  } else {
    absl::StrAppend(&out, "recent failures:\n");
    for (const v1::FailureCount& f : s.recent_failures()) {
      absl::StrAppend(&out, absl::StrFormat("  %-18s x%d (latest %s)\n",
                                            v1::FailureClass_Name(f.failure_class()), f.count(),
                                            f.latest_experiment_id()));
    }
  }
  std::vector<std::string> counts;
  // Map order is by name; the state order reads better.
  for (int state = v1::EXPERIMENT_STATE_QUEUED; state <= v1::EXPERIMENT_STATE_CANCELLED; ++state) {
    const std::string label = StateLabel(static_cast<v1::ExperimentState>(state));
    auto it = s.experiments_by_state().find(label);
    counts.push_back(
        absl::StrCat(label, " ", it != s.experiments_by_state().end() ? it->second : 0));
  }
  AppendRow(&out, "experiments", absl::StrJoin(counts, ", "));
  AppendRow(&out, "next step", FormatNextStep(s.next_step()));
  return out;
}

std::string FormatNextStep(const v1::NextStep& next) {
  const std::string& id = next.experiment_id();
  std::string command;
  switch (next.action()) {
    case v1::NextStep::SUBMIT_BASE:
      command = "servelab submit -f SPEC.yaml";
      break;
    case v1::NextStep::SUBMIT_DELTA:
      command = absl::StrCat("servelab submit --base ", id, " --set PATH=VALUE");
      break;
    case v1::NextStep::WAIT_DONE:
      command = absl::StrCat("servelab wait ", id, " --until done");
      break;
    case v1::NextStep::WAIT_SENT:
      command = absl::StrCat("servelab wait ", id, " --until sent");
      break;
    case v1::NextStep::INSPECT:
      command = absl::StrCat("servelab status ", id);
      break;
    case v1::NextStep::RETRY:
      command = "servelab summary, again in a moment";
      break;
    default:
      break;
  }
  if (next.reason().empty() && command.empty()) return "-";
  if (command.empty()) return next.reason();
  return next.reason().empty() ? command : absl::StrCat(next.reason(), ": ", command);
}

}  // namespace servelab::client
