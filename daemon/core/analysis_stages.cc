// analyze and decide: pure analysis over the stored raw records, never over
// in-memory state, so a re-analysis after a crash follows the same path.
#include <map>

#include "absl/strings/str_cat.h"
#include "analysis/analysis.h"
#include "analysis/decision.h"
#include "common/status_macros.h"
#include "daemon/core/ledger.h"
#include "daemon/core/stages.h"

namespace servelab::core {

absl::StatusOr<v1::Result> AnalyzeStored(StageEnv& env, const v1::Experiment& e) {
  const std::string source =
      e.plan().raw_records_from().empty() ? e.id() : e.plan().raw_records_from();
  SERVELAB_ASSIGN_OR_RETURN(int next, NextAttempt(env.store, source, v1::PHASE_FORMAL));
  if (next == 1) {
    return absl::FailedPreconditionError(absl::StrCat("no formal records stored for ", source));
  }
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::RequestRecord> records,
                            env.store.ListRequests(source, v1::PHASE_FORMAL, next - 1));
  // Runs of the formal load (workload.repeats), in order; rows stored
  // before repeats existed are run 1.
  std::map<int, std::vector<v1::RequestRecord>> runs;
  for (v1::RequestRecord& r : records) runs[std::max(1, r.repeat())].push_back(std::move(r));
  SERVELAB_ASSIGN_OR_RETURN(v1::Result result, analysis::Analyze(runs.begin()->second, e.spec()));
  if (runs.size() > 1) {
    const v1::DecisionRule& rule = e.spec().analysis().decision();
    for (const auto& [repeat, run] : runs) {
      SERVELAB_ASSIGN_OR_RETURN(v1::Result one, analysis::Analyze(run, e.spec()));
      const v1::WindowResult& window =
          rule.window() == v1::WINDOW_STEADY ? one.steady() : one.whole();
      v1::RepeatResult& out = *result.add_repeats();
      out.set_repeat(repeat);
      out.set_requests_completed(window.requests_completed());
      out.set_requests_failed(window.requests_failed());
      // An unknown metric is reported by the decide stage, naming the field.
      absl::StatusOr<double> value = analysis::MetricValue(window, rule.metric());
      out.set_value(value.ok() ? *value : 0);
    }
  }
  *result.mutable_computed_at() = ToTimestamp(env.clock.Now());
  return result;
}

absl::StatusOr<std::optional<v1::Decision>> DecideAgainstBaseline(StageEnv& env,
                                                                  const v1::Experiment& e,
                                                                  const v1::Result& result) {
  const v1::DecisionRule& rule = e.spec().analysis().decision();
  // Check the metric even without a baseline: a typo must not pass silently.
  const v1::WindowResult& window =
      rule.window() == v1::WINDOW_STEADY ? result.steady() : result.whole();
  SERVELAB_RETURN_IF_ERROR(analysis::MetricValue(window, rule.metric()).status());

  std::optional<v1::Experiment> baseline;
  if (!e.spec().analysis().baseline().empty()) {
    absl::StatusOr<v1::Experiment> b = env.store.GetExperiment(e.spec().analysis().baseline());
    if (!b.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "analysis.baseline: experiment \"", e.spec().analysis().baseline(), "\" not found"));
    }
    baseline = *b;
  } else {
    // The scenario's best so far, by this experiment's own rule.
    SERVELAB_ASSIGN_OR_RETURN(baseline, env.baselines.Best(e.spec().scenario(), rule, e.id()));
  }
  if (!baseline.has_value()) return std::optional<v1::Decision>();
  SERVELAB_ASSIGN_OR_RETURN(v1::Decision decision,
                            analysis::Decide(result, baseline->result(), baseline->id(), rule));
  return std::optional<v1::Decision>(decision);
}

}  // namespace servelab::core
