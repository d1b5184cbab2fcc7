#include "client/import/aisbench_details.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/import/fields.h"
#include "client/import/json_value.h"
#include "client/import/record.h"
#include "common/status_macros.h"

namespace servelab::client::import {
namespace {

constexpr char kDbRefKey[] = "__db_ref__";

struct Line {
  int number = 0;
  std::string_view text;
};

struct Request {
  bool success = false;
  // perf_counter seconds; empty when the file records none.
  std::vector<double> time_points;
  std::string error;
  int32_t input_tokens = 0;
  int32_t output_tokens = 0;
};

absl::string_view Sv(std::string_view s) { return {s.data(), s.size()}; }

std::vector<Line> NonBlankLines(std::string_view text) {
  std::vector<Line> lines;
  int number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t newline = text.find('\n', pos);
    size_t end = newline == std::string_view::npos ? text.size() : newline;
    ++number;
    std::string_view line = text.substr(pos, end - pos);
    if (!absl::StripAsciiWhitespace(Sv(line)).empty()) lines.push_back({number, line});
    pos = end + 1;
  }
  return lines;
}

// The row id of a {"__db_ref__": id}, or nullopt when `value` is not one; an
// error when the id is no int64 (SQLite's rowid), which the cast would not hold.
absl::StatusOr<std::optional<int64_t>> DbRef(const JsonValue& value) {
  const JsonValue* ref = value.Find(kDbRefKey);
  if (ref == nullptr || !ref->is_number() || ref->number() != std::floor(ref->number())) {
    return std::nullopt;
  }
  if (ref->number() < -0x1p63 || ref->number() >= 0x1p63) {
    return FieldError("time_points.__db_ref__",
                      absl::StrCat(ref->number(), " is not a SQLite row id (beyond int64)"));
  }
  return static_cast<int64_t>(ref->number());
}

absl::StatusOr<std::vector<double>> Resolve(const JsonValue& object, int64_t row,
                                            const AisbenchStores& stores) {
  const JsonValue* db_name = object.Find("db_name");
  if (db_name == nullptr || !db_name->is_string()) {
    return FieldError("db_name", "missing: time_points refers to a SQLite row but names no file");
  }
  auto store = stores.find(db_name->string());
  if (store == stores.end()) {
    return FieldError("time_points",
                      absl::StrCat("stored as row ", row, " of AISBench's SQLite file db_data/",
                                   db_name->string(),
                                   ", which was not read: import the details file from its "
                                   "performances/<model>/ directory, next to db_data/"));
  }
  auto points = store->second.find(row);
  if (points == store->second.end()) {
    return FieldError("time_points", absl::StrCat("row ", row, " is not in db_data/",
                                                  db_name->string(), " (table numpy_store)"));
  }
  return points->second;
}

struct TimePoints {
  // False for null, which AISBench writes when it could not save the array.
  bool saved = true;
  std::vector<double> points;
};

absl::StatusOr<TimePoints> ReadTimePoints(const JsonValue& object, const AisbenchStores& stores) {
  SERVELAB_ASSIGN_OR_RETURN(const JsonValue* value, RequireMember(object, "time_points"));
  TimePoints result;
  if (value->is_null()) {
    result.saved = false;
    return result;
  }
  std::vector<double>& points = result.points;
  SERVELAB_ASSIGN_OR_RETURN(std::optional<int64_t> row, DbRef(*value));
  if (row.has_value()) {
    SERVELAB_ASSIGN_OR_RETURN(points, Resolve(object, *row, stores));
  } else {
    SERVELAB_ASSIGN_OR_RETURN(
        const std::vector<JsonValue>* items,
        List(*value, "time_points", "a list of numbers or {\"__db_ref__\": <row id>}"));
    for (size_t i = 0; i < items->size(); ++i) {
      SERVELAB_ASSIGN_OR_RETURN(double t, FiniteNumber((*items)[i], ElementPath("time_points", i)));
      points.push_back(t);
    }
  }
  for (size_t i = 0; i < points.size(); ++i) {
    if (!std::isfinite(points[i])) {
      return FieldError(ElementPath("time_points", i), "expected a finite number");
    }
    if (i > 0 && points[i] < points[i - 1]) {
      return FieldError(ElementPath("time_points", i),
                        absl::StrCat(points[i], " is earlier than the point before it, ",
                                     points[i - 1], ": the points must not decrease"));
    }
  }
  return result;
}

absl::Status ReadTokens(const JsonValue& object, Request& r) {
  const JsonValue* input = object.Find("input_tokens");
  const JsonValue* output = object.Find("output_tokens");
  if (!r.success) {
    // A failed request's counts are informative only; keep them when given.
    if (input != nullptr && input->is_number()) {
      SERVELAB_ASSIGN_OR_RETURN(r.input_tokens, TokenCount(*input, "input_tokens"));
    }
    if (output != nullptr && output->is_number()) {
      SERVELAB_ASSIGN_OR_RETURN(r.output_tokens, TokenCount(*output, "output_tokens"));
    }
    return absl::OkStatus();
  }
  constexpr char kTokenizer[] =
      ": the server reported no usage, and AISBench counts such a request with the model's "
      "tokenizer at summary time, which an import cannot repeat";
  if (input == nullptr || input->is_null()) return FieldError("input_tokens", "missing");
  if (output == nullptr || output->is_null()) {
    return FieldError("output_tokens", absl::StrCat("missing or null", kTokenizer));
  }
  SERVELAB_ASSIGN_OR_RETURN(r.input_tokens, TokenCount(*input, "input_tokens"));
  SERVELAB_ASSIGN_OR_RETURN(r.output_tokens, TokenCount(*output, "output_tokens"));
  if (r.input_tokens == 0) return FieldError("input_tokens", absl::StrCat("0", kTokenizer));
  return absl::OkStatus();
}

absl::StatusOr<Request> ReadRequest(const JsonValue& object, const AisbenchStores& stores) {
  if (!object.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a JSON object per line, got ", KindName(object.kind())));
  }
  Request r;
  SERVELAB_ASSIGN_OR_RETURN(const JsonValue* success, RequireMember(object, "success"));
  if (success->kind() != JsonValue::Kind::kBool) {
    return FieldError("success",
                      absl::StrCat("expected a boolean, got ", KindName(success->kind())));
  }
  r.success = success->boolean();
  SERVELAB_ASSIGN_OR_RETURN(TimePoints points, ReadTimePoints(object, stores));
  if (const JsonValue* error = object.Find("error_info"); error != nullptr && error->is_string()) {
    r.error = error->string();
  }
  if (!points.saved) {
    r.success = false;
    r.error = "AISBench saved no time points for this request (it counts it as failed)";
  }
  r.time_points = std::move(points.points);
  if (r.success && r.time_points.size() < 2) {
    return FieldError("time_points",
                      absl::StrCat("a successful request needs the send time and at least one "
                                   "chunk, got ",
                                   r.time_points.size(), " point(s)"));
  }
  SERVELAB_RETURN_IF_ERROR(ReadTokens(object, r));
  return r;
}

v1::RequestRecord ToRecord(const Request& r, size_t index, double origin) {
  v1::RequestRecord rec = NewImportedRecord(static_cast<int32_t>(index));
  rec.set_prompt_tokens(r.input_tokens);
  rec.set_requested_prompt_tokens(r.input_tokens);
  rec.set_completion_tokens(r.output_tokens);
  rec.set_requested_completion_tokens(r.output_tokens);
  int64_t sent = r.time_points.empty() ? 0 : SecondsToNs(r.time_points.front() - origin);
  rec.set_sent_ns(sent);
  rec.set_planned_send_ns(sent);
  if (!r.success) {
    rec.set_error(r.error.empty() ? "request failed (AISBench recorded no error text)" : r.error);
    rec.set_end_ns(sent);
    return rec;
  }
  rec.set_http_status(200);
  std::vector<int64_t> chunks;
  for (size_t i = 1; i < r.time_points.size(); ++i) {
    chunks.push_back(SecondsToNs(r.time_points[i] - origin));
  }
  SetChunks(chunks, rec);
  rec.set_end_ns(chunks.back());
  return rec;
}

absl::StatusOr<ImportedRun> Parse(std::string_view text, std::string_view file,
                                  const AisbenchStores& stores) {
  std::vector<Line> lines = NonBlankLines(text);
  if (lines.empty()) {
    return InFile(
        absl::InvalidArgumentError("empty file; expected AISBench's "
                                   "<dataset>_details.jsonl, one JSON object per request"),
        file);
  }
  std::vector<Request> requests;
  double origin = std::numeric_limits<double>::infinity();
  for (const Line& line : lines) {
    absl::StatusOr<JsonValue> object = ParseJson(line.text, line.number);
    if (!object.ok()) return InFile(object.status(), file);
    absl::StatusOr<Request> r = ReadRequest(*object, stores);
    if (!r.ok()) return InFile(r.status(), file, line.number);
    if (!r->time_points.empty()) origin = std::min(origin, r->time_points.front());
    requests.push_back(*std::move(r));
  }
  if (!std::isfinite(origin)) {
    return InFile(absl::InvalidArgumentError("no request has time points, so none can be placed "
                                             "in time"),
                  file);
  }
  ImportedRun run;
  run.source.set_tool(kAisbenchToolName);
  run.source.set_file_name(std::string(file));
  for (size_t i = 0; i < requests.size(); ++i) {
    // Time points do not decrease: the last is the farthest from the start.
    const std::vector<double>& points = requests[i].time_points;
    if (!points.empty()) {
      absl::Status within = WithinLoad(points.back() - origin, "time_points");
      if (!within.ok()) return InFile(within, file, lines[i].number);
    }
    run.records.push_back(ToRecord(requests[i], i, origin));
  }
  return run;
}

}  // namespace

absl::StatusOr<ImportedRun> ParseAisbenchDetails(std::string_view text, std::string_view file_name,
                                                 const AisbenchStores& stores) {
  return Parse(text, BaseName(file_name), stores);
}

std::vector<std::string> ReferencedDbNames(std::string_view text) {
  std::vector<std::string> names;
  for (const Line& line : NonBlankLines(text)) {
    absl::StatusOr<JsonValue> object = ParseJson(line.text, line.number);
    if (!object.ok()) continue;
    const JsonValue* points = object->Find("time_points");
    const JsonValue* db_name = object->Find("db_name");
    if (points == nullptr || db_name == nullptr || !db_name->is_string()) continue;
    absl::StatusOr<std::optional<int64_t>> ref = DbRef(*points);
    if (!ref.ok() || !ref->has_value()) continue;
    if (std::find(names.begin(), names.end(), db_name->string()) == names.end()) {
      names.push_back(db_name->string());
    }
  }
  return names;
}

}  // namespace servelab::client::import
