// JSON string quoting, shared by every writer of JSON text (the canonical
// spec form, request bodies, the simulator's responses).
//
//   out += JsonQuote("a \"b\"\n");   // "a \"b\"\n" with the quotes
#ifndef SERVELAB_COMMON_JSON_QUOTE_H_
#define SERVELAB_COMMON_JSON_QUOTE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace servelab {

inline std::string JsonQuote(absl::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out += kHex[(c >> 4) & 0xF];
          out += kHex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace servelab

#endif  // SERVELAB_COMMON_JSON_QUOTE_H_
