#include "daemon/engines/prometheus_text.h"

#include <cctype>
#include <cmath>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace servelab::engines {
namespace {

bool IsNameChar(char c, bool first) {
  // Metric names: [a-zA-Z_:][a-zA-Z0-9_:]*; label names use the same set
  // without ':', which is harmless to accept here.
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
         (!first && std::isdigit(static_cast<unsigned char>(c)));
}

// Reads a name from the front of `s`.
absl::string_view TakeName(absl::string_view& s) {
  size_t n = 0;
  while (n < s.size() && IsNameChar(s[n], n == 0)) ++n;
  absl::string_view name = s.substr(0, n);
  s.remove_prefix(n);
  return name;
}

void SkipSpaces(absl::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
}

// Parses `{a="x",b="y\"z"}` from the front of `s` (the '{' already consumed).
bool TakeLabels(absl::string_view& s, std::map<std::string, std::string>& labels) {
  while (true) {
    SkipSpaces(s);
    if (!s.empty() && s.front() == '}') {
      s.remove_prefix(1);
      return true;
    }
    absl::string_view name = TakeName(s);
    SkipSpaces(s);
    if (name.empty() || s.empty() || s.front() != '=') return false;
    s.remove_prefix(1);
    SkipSpaces(s);
    if (s.empty() || s.front() != '"') return false;
    s.remove_prefix(1);
    std::string value;
    while (true) {
      if (s.empty()) return false;
      char c = s.front();
      s.remove_prefix(1);
      if (c == '"') break;
      if (c == '\\') {
        if (s.empty()) return false;
        char e = s.front();
        s.remove_prefix(1);
        value.push_back(e == 'n' ? '\n' : e);  // \\ and \" stand for themselves.
      } else {
        value.push_back(c);
      }
    }
    labels[std::string(name)] = std::move(value);
    SkipSpaces(s);
    if (!s.empty() && s.front() == ',') s.remove_prefix(1);
  }
}

bool ParseValue(absl::string_view text, double& value) {
  if (text == "NaN") {
    value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (text == "+Inf" || text == "Inf") {
    value = std::numeric_limits<double>::infinity();
    return true;
  }
  if (text == "-Inf") {
    value = -std::numeric_limits<double>::infinity();
    return true;
  }
  return absl::SimpleAtod(text, &value);
}

}  // namespace

absl::StatusOr<MetricSamples> ParsePrometheusText(absl::string_view text) {
  MetricSamples samples;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("metrics line ", line_number, ": ", why, ": \"", line, "\""));
    };
    MetricSample sample;
    absl::string_view rest = line;
    sample.name = std::string(TakeName(rest));
    if (sample.name.empty()) return bad("no metric name");
    SkipSpaces(rest);
    if (!rest.empty() && rest.front() == '{') {
      rest.remove_prefix(1);
      if (!TakeLabels(rest, sample.labels)) return bad("malformed labels");
    }
    SkipSpaces(rest);
    std::vector<absl::string_view> fields = absl::StrSplit(rest, ' ', absl::SkipEmpty());
    // value [timestamp]
    if (fields.empty() || fields.size() > 2)
      return bad("expected a value and an optional timestamp");
    if (!ParseValue(fields[0], sample.value)) return bad("bad value");
    samples.push_back(std::move(sample));
  }
  return samples;
}

double SumMetric(const MetricSamples& samples, absl::string_view name) {
  double sum = 0;
  for (const MetricSample& s : samples) {
    if (s.name == name) sum += s.value;
  }
  return sum;
}

bool HasMetric(const MetricSamples& samples, absl::string_view name) {
  for (const MetricSample& s : samples) {
    if (s.name == name) return true;
  }
  return false;
}

}  // namespace servelab::engines
