// What the import parsers share: the fixed fields of an imported record and
// the file/line prefix of their errors.
#ifndef SERVELAB_CLIENT_IMPORT_RECORD_H_
#define SERVELAB_CLIENT_IMPORT_RECORD_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "servelab/v1/result.pb.h"

namespace servelab::client::import {

// A formal-load record of attempt 1, repeat 1, with cached_tokens -1: an
// imported file is one run, and neither tool reports cached prompt tokens.
v1::RequestRecord NewImportedRecord(int32_t request_index);

// Fills first_token_ns and chunk_ns from absolute chunk arrival times
// (nanoseconds from the load start, in order; the first is the first token).
void SetChunks(const std::vector<int64_t>& chunk_ns, v1::RequestRecord& record);

// "dir/x.json" -> "x.json".
std::string_view BaseName(std::string_view path);

// `status` with "<file>: " or "<file>: line <n>: " in front of its message;
// line 0 means the error is not about one line.
absl::Status InFile(const absl::Status& status, std::string_view file, int line = 0);

}  // namespace servelab::client::import

#endif  // SERVELAB_CLIENT_IMPORT_RECORD_H_
