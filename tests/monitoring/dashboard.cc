#include "tests/monitoring/dashboard.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/testing/subprocess.h"

namespace servelab::testing {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

std::string Field(const Struct& s, const std::string& name) {
  auto it = s.fields().find(name);
  return it == s.fields().end() ? "" : it->second.string_value();
}

absl::Status CollectPanels(const Struct& holder, std::vector<DashboardQuery>& out) {
  auto panels = holder.fields().find("panels");
  if (panels == holder.fields().end()) return absl::OkStatus();
  for (const Value& panel_value : panels->second.list_value().values()) {
    const Struct& panel = panel_value.struct_value();
    const std::string title = Field(panel, "title");
    auto targets = panel.fields().find("targets");
    if (targets != panel.fields().end()) {
      for (const Value& target_value : targets->second.list_value().values()) {
        const Struct& target = target_value.struct_value();
        DashboardQuery query{
            .panel = title, .ref_id = Field(target, "refId"), .expr = Field(target, "expr")};
        if (query.expr.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat("panel \"", title, "\" target ", query.ref_id, " has no expr"));
        }
        out.push_back(std::move(query));
      }
    }
    // A collapsed row keeps its panels inside it.
    absl::Status nested = CollectPanels(panel, out);
    if (!nested.ok()) return nested;
  }
  return absl::OkStatus();
}

bool IdentifierStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool IdentifierChar(char c) {
  return IdentifierStart(c) || std::isdigit(static_cast<unsigned char>(c));
}

// Index just past the string literal that starts at i.
size_t SkipString(absl::string_view s, size_t i) {
  const char quote = s[i++];
  while (i < s.size() && s[i] != quote) i += (s[i] == '\\' && quote != '`') ? 2 : 1;
  return std::min(i + 1, s.size());
}

// Index just past the `close` that matches the `open` at i; strings inside
// are skipped whole.
size_t SkipGroup(absl::string_view s, size_t i, char open, char close) {
  int depth = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"' || c == '\'' || c == '`') {
      i = SkipString(s, i);
      continue;
    }
    if (c == open) ++depth;
    if (c == close && --depth == 0) return i + 1;
    ++i;
  }
  return s.size();
}

bool IsKeyword(const std::string& lower) {
  static const char* const kKeywords[] = {
      // Binary operators and modifiers.
      "and", "or", "unless", "atan2", "bool", "offset",
      // Aggregations, which may put `by (...)` before their parentheses.
      "sum", "avg", "count", "min", "max", "group", "stddev", "stdvar", "topk", "bottomk",
      "count_values", "quantile",
      // Number literals.
      "inf", "nan"};
  return std::find(std::begin(kKeywords), std::end(kKeywords), lower) != std::end(kKeywords);
}

// Keywords followed by a list of label names, not metric names.
bool TakesLabelList(const std::string& lower) {
  return lower == "by" || lower == "without" || lower == "on" || lower == "ignoring" ||
         lower == "group_left" || lower == "group_right";
}

}  // namespace

absl::StatusOr<std::vector<DashboardQuery>> LoadDashboardQueries(const std::string& path) {
  const std::string text = ReadFile(path);
  if (text.empty()) return absl::NotFoundError(absl::StrCat(path, ": missing or empty"));
  Struct dashboard;
  auto parsed = google::protobuf::util::JsonStringToMessage(text, &dashboard);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not JSON: ", parsed.ToString()));
  }
  std::vector<DashboardQuery> queries;
  absl::Status collected = CollectPanels(dashboard, queries);
  if (!collected.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", collected.message()));
  return queries;
}

std::vector<std::string> MetricNamesInPromql(absl::string_view s) {
  std::vector<std::string> names;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"' || c == '\'' || c == '`') {
      i = SkipString(s, i);
    } else if (c == '{') {
      i = SkipGroup(s, i, '{', '}');  // Label matchers.
    } else if (c == '[') {
      i = SkipGroup(s, i, '[', ']');  // Ranges and subqueries.
    } else if (c == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '$') {
      // A Grafana variable: $name or ${name}.
      ++i;
      if (i < s.size() && s[i] == '{') {
        i = SkipGroup(s, i, '{', '}');
      } else {
        while (i < s.size() && IdentifierChar(s[i]) && s[i] != ':') ++i;
      }
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      // Numbers and durations: 0.9, 1e3, 0x1f, 5m.
      while (i < s.size() && (IdentifierChar(s[i]) || s[i] == '.') && s[i] != ':') ++i;
    } else if (IdentifierStart(c)) {
      const size_t start = i;
      while (i < s.size() && IdentifierChar(s[i])) ++i;
      const std::string word(s.substr(start, i - start));
      size_t next = i;
      while (next < s.size() && std::isspace(static_cast<unsigned char>(s[next]))) ++next;
      const bool call = next < s.size() && s[next] == '(';
      const std::string lower = absl::AsciiStrToLower(word);
      if (TakesLabelList(lower)) {
        if (call) i = SkipGroup(s, next, '(', ')');
      } else if (!IsKeyword(lower) && !call &&
                 std::find(names.begin(), names.end(), word) == names.end()) {
        names.push_back(word);
      }
    } else {
      ++i;
    }
  }
  return names;
}

std::string ExpandGrafanaIntervals(absl::string_view expr) {
  return absl::StrReplaceAll(expr, {{"${__rate_interval}", "1m"},
                                    {"$__rate_interval", "1m"},
                                    {"${__interval}", "1m"},
                                    {"$__interval", "1m"},
                                    {"${__range}", "10m"},
                                    {"$__range", "10m"}});
}

std::set<std::string> ExposedSeriesNames(absl::string_view exposition) {
  std::set<std::string> names;
  for (absl::string_view line : absl::StrSplit(exposition, '\n', absl::SkipWhitespace())) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    names.emplace(line.substr(0, line.find_first_of("{ \t")));
  }
  return names;
}

}  // namespace servelab::testing
