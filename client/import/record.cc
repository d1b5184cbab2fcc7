#include "client/import/record.h"

#include "absl/strings/str_cat.h"

namespace servelab::client::import {

v1::RequestRecord NewImportedRecord(int32_t request_index) {
  v1::RequestRecord r;
  r.set_phase(v1::PHASE_FORMAL);
  r.set_attempt(1);
  r.set_repeat(1);
  r.set_request_index(request_index);
  r.set_cached_tokens(-1);
  return r;
}

void SetChunks(const std::vector<int64_t>& chunk_ns, v1::RequestRecord& record) {
  record.clear_chunk_ns();
  if (chunk_ns.empty()) {
    record.set_first_token_ns(0);
    return;
  }
  record.set_first_token_ns(chunk_ns.front());
  record.mutable_chunk_ns()->Add(chunk_ns.begin(), chunk_ns.end());
}

std::string_view BaseName(std::string_view path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

absl::Status InFile(const absl::Status& status, std::string_view file, int line) {
  if (status.ok()) return status;
  absl::string_view name(file.data(), file.size());
  std::string prefix =
      line > 0 ? absl::StrCat(name, ": line ", line, ": ") : absl::StrCat(name, ": ");
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

}  // namespace servelab::client::import
