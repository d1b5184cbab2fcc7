// Server-sent events of an OpenAI-compatible streaming response: an
// incremental parser for the byte stream and a reader for the few fields of
// one `data:` JSON chunk that the load generator needs.
//
//   SseParser parser;
//   parser.Feed(bytes, [&](absl::string_view data) {
//     StreamChunk c = ParseStreamChunk(data, v1::API_COMPLETIONS);
//     ...
//   });
//
// Token chunks: for /v1/completions a chunk whose first choice has a
// non-empty "text"; for /v1/chat/completions one whose first choice's
// "delta" has a non-empty "content" (the role-only first chunk is not a
// token). Token counts come from the "usage" chunk and are cross-checked
// with the number of token chunks by the analysis.
//
// SGLang's /generate (API_GENERATE) streams `{"text", "output_ids",
// "meta_info": {"prompt_tokens", "completion_tokens", "cached_tokens", ...}}`
// with cumulative text and counts (tokenizer_manager.py, unless the server
// runs --incremental-streaming-output). Every such chunk counts as usage;
// `counts_are_cumulative` tells the caller that a chunk carries new tokens
// when its completion_tokens grew.
//
// Single-threaded; one parser per response.
#ifndef SERVELAB_LOADGEN_SSE_H_
#define SERVELAB_LOADGEN_SSE_H_

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::loadgen {

class SseParser {
 public:
  // Calls on_data with the data of every complete event in `bytes` (an
  // event's data lines joined by '\n'). Bytes of an incomplete event are kept
  // for the next call.
  void Feed(absl::string_view bytes, absl::FunctionRef<void(absl::string_view data)> on_data);

 private:
  std::string line_;  // Incomplete line.
  std::string data_;  // Data of the event being read.
  bool has_data_ = false;
};

struct StreamChunk {
  bool done = false;        // "data: [DONE]".
  bool has_tokens = false;  // See above.
  bool has_usage = false;
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  // usage.prompt_tokens_details.cached_tokens; -1 when absent (not reported).
  int32_t cached_tokens = -1;
  // Non-empty for an error object, or when the chunk is not valid JSON.
  std::string error;
  // SGLang /generate: the counts are running totals (see above).
  bool counts_are_cumulative = false;
};

StreamChunk ParseStreamChunk(absl::string_view data, v1::Api api);

}  // namespace servelab::loadgen

#endif  // SERVELAB_LOADGEN_SSE_H_
