// UTF-8 validation for text a user hands over (spec files, --set values):
// protobuf refuses to send a string field that is not UTF-8, with a log line
// instead of an error a user can act on, so the CLI checks first.
#ifndef SERVELAB_COMMON_UTF8_H_
#define SERVELAB_COMMON_UTF8_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace servelab {

// The offset of the first byte that does not start or continue a valid
// UTF-8 sequence (overlongs, surrogates and code points past U+10FFFF
// included); text.size() when all of it is valid.
inline size_t FirstInvalidUtf8(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    int length = 0;
    unsigned int cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, cp = c & 0x07;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (int k = 1; k < length; ++k) {
      const unsigned char next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (next & 0x3F);
    }
    static constexpr unsigned int kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinimum[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += length;
  }
  return text.size();
}

}  // namespace servelab

#endif  // SERVELAB_COMMON_UTF8_H_
