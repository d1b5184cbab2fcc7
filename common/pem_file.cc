#include "common/pem_file.h"

#include "absl/strings/str_cat.h"
#include "common/regular_file.h"

namespace servelab {

absl::StatusOr<std::string> ReadPemFile(const std::string& path) {
  constexpr int64_t kMaxPemBytes = 1 << 20;
  absl::StatusOr<std::string> content = ReadRegularFile(path, kMaxPemBytes);
  if (!content.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a readable file (", content.status().message(), ")"));
  }
  if (content->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a PEM file"));
  }
  return content;
}

}  // namespace servelab
