// The sim's token rule. A text prompt has one token per whitespace-separated
// word (ASCII space, tab, newline, CR); each word maps to a stable id (FNV-1a
// hash modulo kVocabSize), so the same text always gives the same ids and the
// prefix cache sees repeated text as a repeated prefix. Generated text is made
// of words " w<id>", so re-tokenizing a completion gives back its token count.
#ifndef SERVELAB_SIM_TOKENS_H_
#define SERVELAB_SIM_TOKENS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"

namespace servelab::sim {

inline constexpr int64_t kVocabSize = 50000;

std::vector<int64_t> TokenizeText(absl::string_view text);
// Text of generated token `index` (0-based) of a request seeded with `seed`:
// a leading space and a short word, JSON-safe.
std::string GeneratedTokenText(uint64_t seed, int64_t index);

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_TOKENS_H_
