#include "sim/metrics.h"

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace servelab::sim {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  ++count_;
  sum_ += value;
}

namespace {
std::string FormatValue(double v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}
std::string WithLe(absl::string_view labels, absl::string_view le) {
  if (labels.empty()) return absl::StrCat("le=\"", le, "\"");
  return absl::StrCat(labels, ",le=\"", le, "\"");
}
}  // namespace

void Histogram::Render(absl::string_view name, absl::string_view help, absl::string_view labels,
                       std::string& out) const {
  RenderHeader(name, "histogram", help, out);
  uint64_t cumulative = 0;
  std::string bucket = absl::StrCat(name, "_bucket");
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    RenderSample(bucket, WithLe(labels, FormatValue(bounds_[i])), static_cast<double>(cumulative),
                 out);
  }
  RenderSample(bucket, WithLe(labels, "+Inf"), static_cast<double>(count_), out);
  RenderSample(absl::StrCat(name, "_sum"), labels, sum_, out);
  RenderSample(absl::StrCat(name, "_count"), labels, static_cast<double>(count_), out);
}

std::vector<double> TtftBuckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}
std::vector<double> E2eBuckets() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}
std::vector<double> InterTokenBuckets() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
          0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
}

void RenderHeader(absl::string_view name, absl::string_view type, absl::string_view help,
                  std::string& out) {
  absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

void RenderSample(absl::string_view name, absl::string_view labels, double value,
                  std::string& out) {
  if (labels.empty()) {
    absl::StrAppend(&out, name, " ", FormatValue(value), "\n");
  } else {
    absl::StrAppend(&out, name, "{", labels, "} ", FormatValue(value), "\n");
  }
}

std::string QuoteLabelValue(absl::string_view value) {
  std::string out = "\"";
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace servelab::sim
