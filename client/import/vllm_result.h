// vLLM's benchmark result file, as `vllm bench serve --save-result
// --save-detailed` writes it: one JSON object (json.dump, one line).
//
// Upstream (vllm-project/vllm):
//   vllm/benchmarks/serve.py, benchmark() builds `result` with the
//     per-request lists input_lens, output_lens, ttfts, itls, latencies,
//     start_times, queue_times, generated_texts and errors; main_async() adds
//     date, backend, label, model_id, tokenizer_id, num_prompts, the
//     --metadata KEY=VALUE pairs, request_rate, burstiness and
//     max_concurrency, and deletes the per-request lists unless
//     --save-detailed is given.
//   vllm/benchmarks/lib/endpoint_request_func.py, RequestFuncOutput and the
//     streaming request functions: start_time = time.perf_counter() just
//     before the POST; ttft = first token chunk - start; itl = one interval
//     per later token chunk; latency = last token chunk - start; error =
//     the HTTP reason or the traceback (empty on success).
//   vllm-project/vllm PR #32667 (January 2026) added start_times;
//     benchmarks/benchmark_serving.py, the older script, wrote no per-request
//     send times (and no latencies).
//
// Mapping to v1::RequestRecord, i = the request's position in the lists:
//   load start = the earliest (start_times[i] - queue_times[i]), i.e. the
//     first request's arrival in vLLM's schedule; without queue_times, the
//     earliest start_times[i]. start_times are perf_counter readings, so only
//     their differences mean anything.
//   sent_ns = start_times[i]; planned_send_ns = sent - queue_times[i] and
//     queued_ns = queue_times[i] (vLLM's client_queue_time: the wait for the
//     --max-concurrency semaphore after the planned arrival). Files without
//     queue_times do not record the schedule: planned = sent, queued 0.
//   chunk_ns = sent + ttft, then + each itl cumulatively; first_token_ns =
//     the first chunk.
//   end_ns = sent + latencies[i]. Files without latencies: sent + ttft +
//     sum(itls[i]), which is what the request function measured as latency
//     (both end at the last token chunk) and what vLLM's own timeline plot
//     computes.
//   prompt_tokens = input_lens[i], completion_tokens = output_lens[i]; the
//     requested counts are the same (the file does not state the request).
//   Failed: errors[i] non-empty, or ttfts[i] == 0 (vLLM sets ttft only when
//     a token chunk arrived, and its error text may be empty when the HTTP
//     reason was). Such a record has error set, http_status 0 (the file keeps
//     no status code), no chunks, first_token_ns 0, end_ns = sent + latency
//     (0 for vLLM's failures: it does not time them).
//   Success: http_status 200.
//   load_start is left unset: `date` is local time without a zone, to the
//     second, and taken after the run ends.
//   source.tool_version = the top-level "vllm_version" or "version" string,
//     which only --metadata writes (the file has no version of its own; the
//     flag's help text uses version=0.3.3 as its example); else empty.
#ifndef SERVELAB_CLIENT_IMPORT_VLLM_RESULT_H_
#define SERVELAB_CLIENT_IMPORT_VLLM_RESULT_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "client/import/import.h"

namespace servelab::client::import {

// `file_name` is the base name used in errors and source.file_name.
absl::StatusOr<ImportedRun> ParseVllmResult(std::string_view text, std::string_view file_name);

}  // namespace servelab::client::import

#endif  // SERVELAB_CLIENT_IMPORT_VLLM_RESULT_H_
