#include "analysis/decision.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/descriptor.h"

namespace servelab::analysis {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

absl::StatusOr<double> NumericField(const Message& m, const std::string& name,
                                    const std::string& metric) {
  const FieldDescriptor* f = m.GetDescriptor()->FindFieldByName(name);
  if (f == nullptr || f->is_repeated()) {
    return absl::InvalidArgumentError(
        absl::StrCat("analysis.decision.metric: unknown metric \"", metric, "\""));
  }
  const auto* refl = m.GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return refl->GetDouble(m, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return static_cast<double>(refl->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_INT32:
      return static_cast<double>(refl->GetInt32(m, f));
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("analysis.decision.metric: \"", metric, "\" is not a number"));
  }
}

bool LowerIsBetter(const std::string& metric) { return metric.find('.') != std::string::npos; }

}  // namespace

absl::StatusOr<double> MetricValue(const v1::WindowResult& window, const std::string& metric) {
  std::vector<std::string> parts = absl::StrSplit(metric, '.');
  if (parts.size() == 1) return NumericField(window, parts[0], metric);
  if (parts.size() == 2) {
    const FieldDescriptor* f = window.GetDescriptor()->FindFieldByName(parts[0]);
    if (f != nullptr && f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !f->is_repeated()) {
      return NumericField(window.GetReflection()->GetMessage(window, f), parts[1], metric);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("analysis.decision.metric: unknown metric \"", metric, "\""));
}

namespace {

// The decision metric of every run: Result.repeats, or the one window's.
struct RunStats {
  double mean = 0;
  double variance = 0;  // Sample variance; 0 with one run.
  int runs = 1;
};

RunStats StatsOf(const v1::Result& result, double single) {
  RunStats stats{.mean = single};
  if (result.repeats_size() < 2) return stats;
  stats.runs = result.repeats_size();
  double sum = 0;
  for (const v1::RepeatResult& r : result.repeats()) sum += r.value();
  stats.mean = sum / stats.runs;
  double squares = 0;
  for (const v1::RepeatResult& r : result.repeats()) {
    squares += (r.value() - stats.mean) * (r.value() - stats.mean);
  }
  stats.variance = squares / (stats.runs - 1);
  return stats;
}

}  // namespace

absl::StatusOr<bool> Better(const v1::Result& a, const v1::Result& b,
                            const v1::DecisionRule& rule) {
  const bool steady = rule.window() == v1::WINDOW_STEADY;
  absl::StatusOr<double> va = MetricValue(steady ? a.steady() : a.whole(), rule.metric());
  if (!va.ok()) return va.status();
  absl::StatusOr<double> vb = MetricValue(steady ? b.steady() : b.whole(), rule.metric());
  if (!vb.ok()) return vb.status();
  const double mean_a = StatsOf(a, *va).mean;
  const double mean_b = StatsOf(b, *vb).mean;
  return LowerIsBetter(rule.metric()) ? mean_a < mean_b : mean_a > mean_b;
}

absl::StatusOr<v1::Decision> Decide(const v1::Result& candidate, const v1::Result& baseline,
                                    const std::string& baseline_experiment_id,
                                    const v1::DecisionRule& rule) {
  bool steady = rule.window() == v1::WINDOW_STEADY;
  const std::string& metric = rule.metric();
  absl::StatusOr<double> value =
      MetricValue(steady ? candidate.steady() : candidate.whole(), metric);
  if (!value.ok()) return value.status();
  absl::StatusOr<double> base = MetricValue(steady ? baseline.steady() : baseline.whole(), metric);
  if (!base.ok()) return base.status();
  const RunStats mine = StatsOf(candidate, *value);
  const RunStats theirs = StatsOf(baseline, *base);
  if (theirs.mean == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("baseline ", baseline_experiment_id, " has ", metric, " = 0"));
  }
  v1::Decision d;
  d.set_baseline_experiment_id(baseline_experiment_id);
  d.set_metric(absl::StrCat(steady ? "steady." : "whole.", metric));
  d.set_baseline_value(theirs.mean);
  d.set_value(mine.mean);
  d.set_repeats(mine.runs);
  d.set_baseline_repeats(theirs.runs);
  const double delta = (mine.mean - theirs.mean) / theirs.mean;
  d.set_delta_fraction(delta);
  // Standard error of the difference of the means, relative to the baseline.
  const double spread =
      std::sqrt(mine.variance / mine.runs + theirs.variance / theirs.runs) / std::abs(theirs.mean);
  d.set_delta_spread(spread);
  const double improvement = LowerIsBetter(metric) ? -delta : delta;
  if ((mine.runs > 1 || theirs.runs > 1) && std::abs(delta) <= 2 * spread) {
    d.set_verdict(v1::VERDICT_INCONCLUSIVE);
  } else {
    d.set_verdict(improvement >= rule.min_improvement() ? v1::VERDICT_KEEP : v1::VERDICT_DISCARD);
  }
  return d;
}

}  // namespace servelab::analysis
