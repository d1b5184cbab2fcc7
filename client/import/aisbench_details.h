// AISBench's per-request details of a performance run (`ais_bench ... --mode
// perf`): performances/<model abbr>/<dataset abbr>_details.jsonl, one JSON
// object per request, whose time points usually live in a SQLite side file.
//
// Upstream (AISBench/benchmark):
//   ais_bench/benchmark/openicl/icl_inferencer/output_handler/base_handler.py:
//     run_cache_consumer() writes, per request, {"data_abbr", "id", ...
//     Output.get_metrics(), "db_name"}; write_to_json() names the file
//     <data_abbr>_details.jsonl in perf mode; _extract_and_write_arrays()
//     replaces every numpy array, so time_points, by {"__db_ref__": <row id>}
//     into the SQLite file db_name (table numpy_store, see aisbench_store.h),
//     or by null when that save failed.
//   ais_bench/benchmark/models/output.py: Output holds success, error_info,
//     time_points, input_tokens, output_tokens, uuid, turn_id, input,
//     prediction ...; RequestOutput.get_metrics() turns a success with fewer
//     than 2 time points into a failure ("chunk size is less than 2").
//   ais_bench/benchmark/models/api_models/base_api.py, stream_infer():
//     time_points[0] = time.perf_counter() before the POST, then one reading
//     per SSE "data:" message other than [DONE]; a failed retry clears them.
//   ais_bench/benchmark/summarizers/default_perf.py, _calc_perf_data(): how
//     AISBench itself reads a line: start = time_points[0], end =
//     time_points[-1], ttft = time_points[1] - time_points[0], itl = the
//     differences of time_points[1:]; input_tokens <= 0 or output_tokens
//     null are counted with the tokenizer; time_points null counts as failed.
//
// Mapping to v1::RequestRecord, request_index = the line's position among
// the file's non-blank lines:
//   load start = the earliest time_points[0] of the file.
//   sent_ns = planned_send_ns = time_points[0] (AISBench keeps no planned
//     time); chunk_ns = time_points[1..]; first_token_ns = time_points[1];
//     end_ns = the last time point. Every SSE message counts as a chunk, as
//     AISBench's own ITL does, including a trailing usage-only message.
//   prompt_tokens = input_tokens, completion_tokens = output_tokens, the
//     requested counts the same. A success without server-reported counts
//     (input_tokens <= 0, output_tokens null or absent) is an error: AISBench
//     fills them with the model's tokenizer at summary time, which an import
//     cannot repeat.
//   Failed (success false): error = error_info, http_status 0, no chunks,
//     sent_ns = end_ns = time_points[0] when there is one, else both 0 (a
//     request whose time points were cleared after a failed retry). A line
//     whose time_points is null is failed the same way, as AISBench counts it.
//   Success: http_status 200. load_start unset: the file holds only
//     perf_counter readings. source.tool_version empty: the file has none.
#ifndef SERVELAB_CLIENT_IMPORT_AISBENCH_DETAILS_H_
#define SERVELAB_CLIENT_IMPORT_AISBENCH_DETAILS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "client/import/import.h"

namespace servelab::client::import {

// The rows of one numpy_store table: row id -> the array (seconds).
using NumpyStore = absl::flat_hash_map<int64_t, std::vector<double>>;
// db_name (as the lines give it) -> its table.
using AisbenchStores = absl::flat_hash_map<std::string, NumpyStore>;

// Parses the details file. A {"__db_ref__": id} time_points is looked up in
// stores[db_name]; a db_name absent from `stores` is an error telling which
// side file to provide, a missing row an error naming it. Inline lists of
// time points (AISBench's summarizer reads those as well) need no store.
absl::StatusOr<ImportedRun> ParseAisbenchDetails(std::string_view text, std::string_view file_name,
                                                 const AisbenchStores& stores);

// The distinct db_name values of the lines whose time_points is a
// {"__db_ref__": ...}, in first-seen order: the side files to read. Lines
// that do not parse are skipped; ParseAisbenchDetails reports them.
std::vector<std::string> ReferencedDbNames(std::string_view text);

}  // namespace servelab::client::import

#endif  // SERVELAB_CLIENT_IMPORT_AISBENCH_DETAILS_H_
