#include "common/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace servelab {

absl::Status WriteFileAtomically(const std::string& path, const std::string& content) {
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out.good()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot write ", temporary, ": ", std::strerror(errno)));
    }
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot rename ", temporary, " to ", path, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace servelab
