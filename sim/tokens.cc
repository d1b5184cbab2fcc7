#include "sim/tokens.h"

#include "absl/strings/str_cat.h"

namespace servelab::sim {

std::vector<int64_t> TokenizeText(absl::string_view text) {
  std::vector<int64_t> ids;
  uint64_t h = 0;
  bool in_word = false;
  for (char c : text) {
    bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (space) {
      if (in_word) ids.push_back(static_cast<int64_t>(h % kVocabSize));
      in_word = false;
      continue;
    }
    if (!in_word) h = 1469598103934665603ull;
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
    in_word = true;
  }
  if (in_word) ids.push_back(static_cast<int64_t>(h % kVocabSize));
  return ids;
}

std::string GeneratedTokenText(uint64_t seed, int64_t index) {
  // splitmix64: cheap and well mixed, so outputs look varied but are reproducible.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return absl::StrCat(" w", z % kVocabSize);
}

}  // namespace servelab::sim
