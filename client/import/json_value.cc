#include "client/import/json_value.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace servelab::client::import {

JsonValue JsonValue::Bool(bool b) {
  JsonValue v;
  v.value_ = b;
  return v;
}
JsonValue JsonValue::Number(double d) {
  JsonValue v;
  v.value_ = d;
  return v;
}
JsonValue JsonValue::String(std::string s) {
  JsonValue v;
  v.value_ = std::move(s);
  return v;
}
JsonValue JsonValue::Array(std::vector<JsonValue> items) {
  JsonValue v;
  v.value_ = std::move(items);
  return v;
}
JsonValue JsonValue::Object(std::vector<JsonMember> members) {
  JsonValue v;
  v.value_ = std::move(members);
  return v;
}

const JsonValue* JsonValue::Find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const JsonMember& m : object()) {
    if (m.key == key) return &m.value;
  }
  return nullptr;
}

const char* KindName(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::kNull:
      return "null";
    case JsonValue::Kind::kBool:
      return "a boolean";
    case JsonValue::Kind::kNumber:
      return "a number";
    case JsonValue::Kind::kString:
      return "a string";
    case JsonValue::Kind::kArray:
      return "a list";
    case JsonValue::Kind::kObject:
      return "an object";
  }
  return "a value";
}

namespace {

constexpr int kMaxDepth = 64;

// Recursive descent over the text; pos_ is a byte offset. Single-threaded,
// one instance per ParseJson call.
class Parser {
 public:
  Parser(std::string_view text, int first_line) : text_(text), first_line_(first_line) {}

  absl::StatusOr<JsonValue> ParseDocument() {
    SkipSpace();
    absl::StatusOr<JsonValue> value = ParseValue(0);
    if (!value.ok()) return value;
    SkipSpace();
    if (pos_ != text_.size()) return Error("expected the end of the text after the value");
    return value;
  }

 private:
  absl::Status Error(std::string_view what) const {
    int line = first_line_;
    size_t line_start = 0;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat("line ", line, ", column ",
                                                   pos_ - line_start + 1, ": ",
                                                   absl::string_view(what.data(), what.size())));
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }

  void SkipSpace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r')) {
      ++pos_;
    }
  }

  bool Consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  absl::StatusOr<JsonValue> ParseValue(int depth) {
    if (depth > kMaxDepth) return Error("nesting deeper than 64 levels");
    if (AtEnd()) return Error("unexpected end of the text: the file is truncated");
    char c = Peek();
    if (c == '{') return ParseObject(depth);
    if (c == '[') return ParseArray(depth);
    if (c == '"') {
      absl::StatusOr<std::string> s = ParseString();
      if (!s.ok()) return s.status();
      return JsonValue::String(*std::move(s));
    }
    if (Consume("true")) return JsonValue::Bool(true);
    if (Consume("false")) return JsonValue::Bool(false);
    if (Consume("null")) return JsonValue();
    // Python's json.dump writes these for non-finite floats.
    if (Consume("NaN")) return JsonValue::Number(std::numeric_limits<double>::quiet_NaN());
    if (Consume("Infinity")) return JsonValue::Number(std::numeric_limits<double>::infinity());
    if (Consume("-Infinity")) return JsonValue::Number(-std::numeric_limits<double>::infinity());
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber();
    return Error("expected a value (object, list, string, number, true, false or null)");
  }

  absl::StatusOr<JsonValue> ParseObject(int depth) {
    ++pos_;  // '{'
    std::vector<JsonMember> members;
    SkipSpace();
    if (Peek() == '}') {
      ++pos_;
      return JsonValue::Object(std::move(members));
    }
    while (true) {
      SkipSpace();
      if (AtEnd())
        return Error("unexpected end of the text inside an object: the file is truncated");
      if (Peek() != '"') return Error("expected a quoted key");
      absl::StatusOr<std::string> key = ParseString();
      if (!key.ok()) return key.status();
      SkipSpace();
      if (Peek() != ':')
        return Error(AtEnd() ? "unexpected end of the text: the file is truncated"
                             : "expected ':' after the key");
      ++pos_;
      SkipSpace();
      absl::StatusOr<JsonValue> value = ParseValue(depth + 1);
      if (!value.ok()) return value.status();
      members.push_back(JsonMember{*std::move(key), *std::move(value)});
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        return JsonValue::Object(std::move(members));
      }
      return Error(AtEnd() ? "unexpected end of the text inside an object: the file is truncated"
                           : "expected ',' or '}' in an object");
    }
  }

  absl::StatusOr<JsonValue> ParseArray(int depth) {
    ++pos_;  // '['
    std::vector<JsonValue> items;
    SkipSpace();
    if (Peek() == ']') {
      ++pos_;
      return JsonValue::Array(std::move(items));
    }
    while (true) {
      SkipSpace();
      absl::StatusOr<JsonValue> value = ParseValue(depth + 1);
      if (!value.ok()) return value.status();
      items.push_back(*std::move(value));
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == ']') {
        ++pos_;
        return JsonValue::Array(std::move(items));
      }
      return Error(AtEnd() ? "unexpected end of the text inside a list: the file is truncated"
                           : "expected ',' or ']' in a list");
    }
  }

  absl::StatusOr<JsonValue> ParseNumber() {
    size_t start = pos_;
    if (Peek() == '-') ++pos_;
    while (!AtEnd() && ((Peek() >= '0' && Peek() <= '9') || Peek() == '.' || Peek() == 'e' ||
                        Peek() == 'E' || Peek() == '+' || Peek() == '-')) {
      ++pos_;
    }
    double d = 0;
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    auto [end, ec] = std::from_chars(first, last, d);
    if (ec != std::errc() || end != last) {
      pos_ = start;
      return Error("malformed number");
    }
    return JsonValue::Number(d);
  }

  absl::StatusOr<std::string> ParseString();
  absl::Status AppendEscape(std::string& out);
  absl::StatusOr<uint32_t> ParseHex4();

  std::string_view text_;
  int first_line_;
  size_t pos_ = 0;
};

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

absl::StatusOr<std::string> Parser::ParseString() {
  ++pos_;  // '"'
  std::string out;
  while (true) {
    if (AtEnd()) return Error("unexpected end of the text inside a string: the file is truncated");
    char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      return out;
    }
    if (static_cast<unsigned char>(c) < 0x20) return Error("control character inside a string");
    if (c == '\\') {
      ++pos_;
      absl::Status escaped = AppendEscape(out);
      if (!escaped.ok()) return escaped;
      continue;
    }
    out.push_back(c);
    ++pos_;
  }
}

absl::Status Parser::AppendEscape(std::string& out) {
  if (AtEnd()) return Error("unexpected end of the text inside a string: the file is truncated");
  char c = text_[pos_++];
  switch (c) {
    case '"':
    case '\\':
    case '/':
      out.push_back(c);
      return absl::OkStatus();
    case 'b':
      out.push_back('\b');
      return absl::OkStatus();
    case 'f':
      out.push_back('\f');
      return absl::OkStatus();
    case 'n':
      out.push_back('\n');
      return absl::OkStatus();
    case 'r':
      out.push_back('\r');
      return absl::OkStatus();
    case 't':
      out.push_back('\t');
      return absl::OkStatus();
    case 'u':
      break;
    default:
      --pos_;
      return Error("unknown escape in a string");
  }
  absl::StatusOr<uint32_t> cp = ParseHex4();
  if (!cp.ok()) return cp.status();
  // json.dump's default ensure_ascii writes non-BMP characters as surrogate
  // pairs; a lone surrogate becomes U+FFFD rather than failing the import.
  if (*cp >= 0xD800 && *cp < 0xDC00 && text_.substr(pos_, 2) == "\\u") {
    size_t saved = pos_;
    pos_ += 2;
    absl::StatusOr<uint32_t> low = ParseHex4();
    if (low.ok() && *low >= 0xDC00 && *low < 0xE000) {
      AppendUtf8(0x10000 + ((*cp - 0xD800) << 10) + (*low - 0xDC00), out);
      return absl::OkStatus();
    }
    pos_ = saved;
  }
  AppendUtf8(*cp >= 0xD800 && *cp < 0xE000 ? 0xFFFD : *cp, out);
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> Parser::ParseHex4() {
  if (pos_ + 4 > text_.size()) return Error("unexpected end of the text in a \\u escape");
  uint32_t cp = 0;
  auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + pos_ + 4, cp, 16);
  if (ec != std::errc() || end != text_.data() + pos_ + 4) return Error("malformed \\u escape");
  pos_ += 4;
  return cp;
}

}  // namespace

absl::StatusOr<JsonValue> ParseJson(std::string_view text, int first_line) {
  return Parser(text, first_line).ParseDocument();
}

}  // namespace servelab::client::import
