// What the fuzz targets share (header-only; used by fuzz/*_fuzzer.cc):
// splitting one fuzz input into the pieces a target needs, so that
// libFuzzer's byte mutations reach every piece; a checked invariant; and a
// scratch directory for targets that read files.
//
//   FuzzInput in(data, size);
//   int mode = in.Byte();                 // 0 when the input is exhausted
//   std::string_view text = in.Rest();
//   SERVELAB_FUZZ_CHECK(Parse(text).ok() || ...);
#ifndef SERVELAB_FUZZ_FUZZ_INPUT_H_
#define SERVELAB_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

// An invariant of the code under test: aborts (a crash libFuzzer saves, or a
// failed regression test) when it does not hold. Active in every build.
#define SERVELAB_FUZZ_CHECK(condition)                                                        \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)

namespace servelab::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}

  // The next byte, or 0 when none is left.
  uint8_t Byte() {
    if (rest_.empty()) return 0;
    uint8_t b = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  // Everything up to (not including) the next `separator`, or the rest.
  std::string_view Until(std::string_view separator) {
    size_t end = rest_.find(separator);
    std::string_view piece = rest_.substr(0, end);
    rest_.remove_prefix(end == std::string_view::npos ? rest_.size() : end + separator.size());
    return piece;
  }
  std::string_view Rest() {
    std::string_view piece = rest_;
    rest_ = {};
    return piece;
  }
  bool empty() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

// A directory of this process under /tmp, made on the first call and removed
// at exit. Single-threaded, as libFuzzer runs a target.
inline const std::filesystem::path& ScratchDir() {
  static const std::filesystem::path* dir = [] {
    std::string name = (std::filesystem::temp_directory_path() / "servelab-fuzz-XXXXXX").string();
    if (mkdtemp(name.data()) == nullptr) std::abort();
    std::atexit([] { std::filesystem::remove_all(ScratchDir()); });
    return new std::filesystem::path(name);
  }();
  return *dir;
}

}  // namespace servelab::fuzz

#endif  // SERVELAB_FUZZ_FUZZ_INPUT_H_
