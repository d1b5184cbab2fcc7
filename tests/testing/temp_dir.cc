#include "tests/testing/temp_dir.h"

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>

namespace servelab::testing {

TempDir::TempDir() {
  // Short paths: unix socket paths are limited to 107 bytes.
  const char* tmp = getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/servelab.XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::File(const std::string& name) const { return path_ + "/" + name; }

}  // namespace servelab::testing
