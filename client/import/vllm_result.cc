#include "client/import/vllm_result.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/import/fields.h"
#include "client/import/json_value.h"
#include "client/import/record.h"
#include "common/status_macros.h"

namespace servelab::client::import {
namespace {

// A last chunk may pass latency by rounding only: ttft + sum(itls) adds up
// differences of perf_counter readings, latency is one difference. More than
// this is a file that contradicts itself.
constexpr int64_t kLatencySlackNs = 1000;

// The per-request lists, each checked to be a list of the same length.
struct Columns {
  const std::vector<JsonValue>* input_lens = nullptr;
  const std::vector<JsonValue>* output_lens = nullptr;
  const std::vector<JsonValue>* ttfts = nullptr;
  const std::vector<JsonValue>* itls = nullptr;
  const std::vector<JsonValue>* errors = nullptr;
  const std::vector<JsonValue>* start_times = nullptr;
  const std::vector<JsonValue>* latencies = nullptr;    // Optional.
  const std::vector<JsonValue>* queue_times = nullptr;  // Optional.
};

struct Request {
  double start = 0;
  double queue = 0;
  double ttft = 0;
  double latency = 0;
  bool has_latency = false;
  std::vector<double> itls;
  int32_t input_len = 0;
  int32_t output_len = 0;
  std::string error;
};

// Tells apart the files that cannot be imported by what they lack, since
// each needs a different fix.
absl::Status CheckDetailed(const JsonValue& root) {
  bool any_detail = false;
  for (const char* key : {"input_lens", "output_lens", "ttfts", "itls", "errors"}) {
    any_detail = any_detail || root.Find(key) != nullptr;
  }
  if (!any_detail) {
    return absl::InvalidArgumentError(
        "no per-request data (input_lens, output_lens, ttfts, itls, errors): the result was "
        "saved without --save-detailed");
  }
  if (root.Find("start_times") == nullptr) {
    return FieldError("start_times",
                      "missing: the file lacks per-request send times, so its requests cannot "
                      "be placed in time; vllm bench serve writes them with --save-result "
                      "--save-detailed since vLLM PR #32667 (January 2026); "
                      "benchmarks/benchmark_serving.py never did");
  }
  return absl::OkStatus();
}

absl::StatusOr<const std::vector<JsonValue>*> Column(const JsonValue& root, const char* key,
                                                     const char* what, size_t expected_size,
                                                     bool optional = false) {
  const JsonValue* value = root.Find(key);
  if (value == nullptr || (optional && value->is_null())) {
    if (optional) return nullptr;
    return FieldError(key, "missing");
  }
  SERVELAB_ASSIGN_OR_RETURN(const std::vector<JsonValue>* list, List(*value, key, what));
  if (expected_size != std::numeric_limits<size_t>::max() && list->size() != expected_size) {
    return FieldError(key, absl::StrCat("has ", list->size(), " entries, but ttfts has ",
                                        expected_size, ": the lists must be as long"));
  }
  return list;
}

absl::StatusOr<Columns> ReadColumns(const JsonValue& root) {
  SERVELAB_RETURN_IF_ERROR(CheckDetailed(root));
  Columns c;
  SERVELAB_ASSIGN_OR_RETURN(
      c.ttfts, Column(root, "ttfts", "a list of numbers", std::numeric_limits<size_t>::max()));
  size_t n = c.ttfts->size();
  if (n == 0) return FieldError("ttfts", "empty: the result holds no requests");
  SERVELAB_ASSIGN_OR_RETURN(c.input_lens, Column(root, "input_lens", "a list of token counts", n));
  SERVELAB_ASSIGN_OR_RETURN(c.output_lens,
                            Column(root, "output_lens", "a list of token counts", n));
  SERVELAB_ASSIGN_OR_RETURN(c.itls, Column(root, "itls", "a list of lists of numbers", n));
  SERVELAB_ASSIGN_OR_RETURN(c.errors, Column(root, "errors", "a list of strings", n));
  SERVELAB_ASSIGN_OR_RETURN(c.start_times, Column(root, "start_times", "a list of numbers", n));
  SERVELAB_ASSIGN_OR_RETURN(c.latencies,
                            Column(root, "latencies", "a list of numbers", n, /*optional=*/true));
  SERVELAB_ASSIGN_OR_RETURN(c.queue_times,
                            Column(root, "queue_times", "a list of numbers", n, /*optional=*/true));
  return c;
}

absl::StatusOr<Request> ReadRequest(const Columns& c, size_t i) {
  Request r;
  SERVELAB_ASSIGN_OR_RETURN(r.start,
                            FiniteNumber((*c.start_times)[i], ElementPath("start_times", i)));
  SERVELAB_ASSIGN_OR_RETURN(r.ttft, NonNegativeSeconds((*c.ttfts)[i], ElementPath("ttfts", i)));
  SERVELAB_ASSIGN_OR_RETURN(r.itls, SecondsList((*c.itls)[i], ElementPath("itls", i)));
  SERVELAB_ASSIGN_OR_RETURN(r.input_len,
                            TokenCount((*c.input_lens)[i], ElementPath("input_lens", i)));
  SERVELAB_ASSIGN_OR_RETURN(r.output_len,
                            TokenCount((*c.output_lens)[i], ElementPath("output_lens", i)));
  const JsonValue& error = (*c.errors)[i];
  if (!error.is_string()) {
    return FieldError(ElementPath("errors", i),
                      absl::StrCat("expected a string, got ", KindName(error.kind())));
  }
  r.error = error.string();
  if (c.latencies != nullptr) {
    SERVELAB_ASSIGN_OR_RETURN(r.latency,
                              NonNegativeSeconds((*c.latencies)[i], ElementPath("latencies", i)));
    r.has_latency = true;
  }
  if (c.queue_times != nullptr) {
    SERVELAB_ASSIGN_OR_RETURN(
        r.queue, NonNegativeSeconds((*c.queue_times)[i], ElementPath("queue_times", i)));
  }
  return r;
}

// vLLM sets ttft only once a token chunk arrived, and may leave the error text empty.
bool Failed(const Request& r) { return !r.error.empty() || r.ttft == 0; }

// Each time of request i, from the load start, within WithinLoad's bound.
absl::Status CheckWithinLoad(const Request& r, size_t i, double origin) {
  const double start = r.start - origin;
  SERVELAB_RETURN_IF_ERROR(WithinLoad(start, ElementPath("start_times", i)));
  double offset = r.ttft;
  SERVELAB_RETURN_IF_ERROR(WithinLoad(start + offset, ElementPath("ttfts", i)));
  for (double itl : r.itls) offset += itl;
  SERVELAB_RETURN_IF_ERROR(WithinLoad(start + offset, ElementPath("itls", i)));
  return WithinLoad(start + r.latency, ElementPath("latencies", i));
}

absl::StatusOr<v1::RequestRecord> ToRecord(const Request& r, size_t i, double origin) {
  SERVELAB_RETURN_IF_ERROR(CheckWithinLoad(r, i, origin));
  v1::RequestRecord rec = NewImportedRecord(static_cast<int32_t>(i));
  int64_t sent = SecondsToNs(r.start - origin);
  rec.set_sent_ns(sent);
  rec.set_queued_ns(SecondsToNs(r.queue));
  rec.set_planned_send_ns(SecondsToNs(r.start - r.queue - origin));
  rec.set_prompt_tokens(r.input_len);
  rec.set_requested_prompt_tokens(r.input_len);
  rec.set_completion_tokens(r.output_len);
  rec.set_requested_completion_tokens(r.output_len);
  if (Failed(r)) {
    rec.set_error(r.error.empty() ? "request failed without an error text (vLLM records the HTTP "
                                    "reason, which was empty)"
                                  : r.error);
    rec.set_end_ns(sent + (r.has_latency ? SecondsToNs(r.latency) : 0));
    return rec;
  }
  rec.set_http_status(200);
  std::vector<int64_t> chunks;
  chunks.reserve(r.itls.size() + 1);
  double offset = r.ttft;
  chunks.push_back(sent + SecondsToNs(offset));
  for (double itl : r.itls) {
    offset += itl;
    chunks.push_back(sent + SecondsToNs(offset));
  }
  SetChunks(chunks, rec);
  if (!r.has_latency) {
    rec.set_end_ns(chunks.back());
    return rec;
  }
  int64_t end = sent + SecondsToNs(r.latency);
  if (chunks.back() - end > kLatencySlackNs) {
    return FieldError(ElementPath("latencies", i),
                      absl::StrCat(r.latency, " s is shorter than ttfts[", i, "] + sum(itls[", i,
                                   "]) = ", offset, " s"));
  }
  rec.set_end_ns(std::max(end, chunks.back()));
  return rec;
}

// --metadata is the only way a version gets into the file.
std::string ToolVersion(const JsonValue& root) {
  for (const char* key : {"vllm_version", "version"}) {
    const JsonValue* v = root.Find(key);
    if (v != nullptr && v->is_string()) return v->string();
  }
  return "";
}

// `vllm bench serve --append-result` appends one json.dump line per run.
bool HoldsSeveralResults(std::string_view text) {
  size_t newline = text.find('\n');
  if (newline == std::string_view::npos) return false;
  if (absl::StripAsciiWhitespace(absl::string_view(text.data() + newline, text.size() - newline))
          .empty()) {
    return false;
  }
  absl::StatusOr<JsonValue> first = ParseJson(text.substr(0, newline));
  return first.ok() && first->is_object();
}

absl::StatusOr<ImportedRun> Parse(std::string_view text) {
  if (absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())).empty()) {
    return absl::InvalidArgumentError(
        "empty file; expected the JSON object of vllm bench serve --save-result --save-detailed");
  }
  absl::StatusOr<JsonValue> root = ParseJson(text);
  if (!root.ok()) {
    if (HoldsSeveralResults(text)) {
      return absl::InvalidArgumentError(
          "holds more than one result, one JSON object per line (vllm bench serve "
          "--append-result); import one run per file");
    }
    return absl::InvalidArgumentError(absl::StrCat("not valid JSON: ", root.status().message()));
  }
  if (!root->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a JSON object at the top, got ", KindName(root->kind())));
  }
  SERVELAB_ASSIGN_OR_RETURN(Columns columns, ReadColumns(*root));
  std::vector<Request> requests;
  double origin = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < columns.ttfts->size(); ++i) {
    SERVELAB_ASSIGN_OR_RETURN(Request r, ReadRequest(columns, i));
    origin = std::min(origin, r.start - r.queue);
    requests.push_back(std::move(r));
  }
  ImportedRun run;
  run.source.set_tool(kVllmToolName);
  run.source.set_tool_version(ToolVersion(*root));
  for (size_t i = 0; i < requests.size(); ++i) {
    SERVELAB_ASSIGN_OR_RETURN(v1::RequestRecord rec, ToRecord(requests[i], i, origin));
    run.records.push_back(std::move(rec));
  }
  return run;
}

}  // namespace

absl::StatusOr<ImportedRun> ParseVllmResult(std::string_view text, std::string_view file_name) {
  std::string_view base = BaseName(file_name);
  absl::StatusOr<ImportedRun> run = Parse(text);
  if (!run.ok()) return InFile(run.status(), base);
  run->source.set_file_name(std::string(base));
  return run;
}

}  // namespace servelab::client::import
