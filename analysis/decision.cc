#include "analysis/decision.h"

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
  if (*base == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("baseline ", baseline_experiment_id, " has ", metric, " = 0"));
  }
  v1::Decision d;
  d.set_baseline_experiment_id(baseline_experiment_id);
  d.set_metric(absl::StrCat(steady ? "steady." : "whole.", metric));
  d.set_baseline_value(*base);
  d.set_value(*value);
  double delta = (*value - *base) / *base;
  d.set_delta_fraction(delta);
  double improvement = LowerIsBetter(metric) ? -delta : delta;
  d.set_verdict(improvement >= rule.min_improvement() ? v1::VERDICT_KEEP : v1::VERDICT_DISCARD);
  return d;
}

}  // namespace servelab::analysis
