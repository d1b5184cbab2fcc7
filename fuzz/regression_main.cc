// A main() for the normal (g++) build: replays every file of the corpus
// directories given on the command line through the target's
// LLVMFuzzerTestOneInput, so ctest re-checks the committed corpus without
// clang or libFuzzer (fuzz/CMakeLists.txt registers one test per target).
//
//   spec_fuzz_regression fuzz/corpus/spec
//
// Exits 1 when an argument is not a readable directory or holds no file; a
// defect shows up as the crash (or sanitizer report) of the input at fault,
// whose name is printed first.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::filesystem::path> CorpusFiles(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<std::filesystem::path> files = CorpusFiles(argv[i]);
    if (files.empty()) {
      std::fprintf(stderr, "%s: no corpus files\n", argv[i]);
      return 1;
    }
    for (const std::filesystem::path& file : files) {
      std::fprintf(stderr, "replaying %s\n", file.c_str());
      std::ifstream in(file, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  std::printf("replayed %zu inputs\n", replayed);
  return 0;
}
