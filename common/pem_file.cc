#include "common/pem_file.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace servelab {

absl::StatusOr<std::string> ReadPemFile(const std::string& path) {
  std::error_code error;
  std::ifstream in(path, std::ios::binary);
  if (!std::filesystem::is_regular_file(path, error) || !in.is_open()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a readable file"));
  }
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a readable file"));
  if (content.find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a PEM file"));
  }
  return content;
}

}  // namespace servelab
