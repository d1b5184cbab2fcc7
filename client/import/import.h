// Parsers for `servelab import` (issue 11): result files of other load
// generators become the raw records of an experiment, marked as external, so
// the same analysis (both windows, the decision) runs on them.
//
//   SERVELAB_ASSIGN_OR_RETURN(Tool tool, ParseToolName("vllm"));
//   SERVELAB_ASSIGN_OR_RETURN(ImportedRun run, ParseResultFile(tool, text, "result.json"));
//
// Supported files, with the upstream code that writes them:
//   vLLM `vllm bench serve --save-result --save-detailed` (vllm_result.h)
//   AISBench `--mode perf` per-request details, <dataset>_details.jsonl
//     (aisbench_details.h; import_file.h also reads its SQLite side file)
//
// Records follow proto/servelab/v1/result.proto: times are nanoseconds from
// the load start, which is the earliest moment the file records (each
// parser's header says which). Every error is INVALID_ARGUMENT naming the
// file, the line for JSONL, and the field path; on error nothing is returned,
// so nothing gets stored. No value is invented: what a file does not hold
// is either derivable exactly from what it does (said where it is done) or
// an error saying which tool version or flag writes it.
//
// Pure functions over text: no I/O, no clock, thread-compatible.
#ifndef SERVELAB_CLIENT_IMPORT_IMPORT_H_
#define SERVELAB_CLIENT_IMPORT_IMPORT_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "servelab/v1/experiment.pb.h"
#include "servelab/v1/result.pb.h"

namespace servelab::client::import {

// The proto's ExternalSource.tool values.
inline constexpr char kVllmToolName[] = "vllm-bench-serve";
inline constexpr char kAisbenchToolName[] = "aisbench";

struct ImportedRun {
  // tool, tool_version (empty when the file does not state it) and
  // file_name (the base name).
  v1::ExternalSource source;
  // PHASE_FORMAL, attempt 1, repeat 1, request_index 0..n-1 in file order;
  // cached_tokens -1 (neither tool reports it); experiment_id empty (the
  // caller assigns it).
  std::vector<v1::RequestRecord> records;
};

enum class Tool { kVllmBenchServe, kAisbench };

// "vllm" or "vllm-bench-serve" -> kVllmBenchServe; "aisbench" -> kAisbench.
// INVALID_ARGUMENT listing the accepted names otherwise.
absl::StatusOr<Tool> ParseToolName(std::string_view name);

// Parses `text`, the content of the file `file_name` (a path or base name;
// errors and source.file_name use its base name). An AISBench file whose time
// points live in its SQLite side file fails here with a message saying so;
// import_file.h reads both.
absl::StatusOr<ImportedRun> ParseResultFile(Tool tool, std::string_view text,
                                            std::string_view file_name);

}  // namespace servelab::client::import

#endif  // SERVELAB_CLIENT_IMPORT_IMPORT_H_
