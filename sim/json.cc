#include "sim/json.h"

#include <simdjson.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/json_quote.h"
#include "common/utf8.h"

namespace servelab::sim {

JsonValue JsonValue::Bool(bool b) {
  JsonValue v;
  v.type_ = Type::kBool;
  v.bool_ = b;
  return v;
}
JsonValue JsonValue::Number(double d, bool is_integer) {
  JsonValue v;
  v.type_ = Type::kNumber;
  v.number_ = d;
  // int_value() converts to int64_t, undefined outside [-2^63, 2^63): an
  // integer literal beyond that is a plain number (found by fuzz/).
  v.is_integer_ = is_integer && d >= -0x1p63 && d < 0x1p63 && std::trunc(d) == d;
  return v;
}
JsonValue JsonValue::String(std::string s) {
  JsonValue v;
  v.type_ = Type::kString;
  v.string_ = std::move(s);
  return v;
}
JsonValue JsonValue::Array(std::vector<JsonValue> items) {
  JsonValue v;
  v.type_ = Type::kArray;
  v.items_ = std::move(items);
  return v;
}
JsonValue JsonValue::Object(std::vector<std::pair<std::string, JsonValue>> members) {
  JsonValue v;
  v.type_ = Type::kObject;
  v.members_ = std::move(members);
  return v;
}

const JsonValue* JsonValue::Find(absl::string_view key) const {
  if (type_ != Type::kObject) return nullptr;
  for (auto it = members_.rbegin(); it != members_.rend(); ++it) {
    if (it->first == key) return &it->second;
  }
  return nullptr;
}

void JsonValue::Set(absl::string_view key, const JsonValue* value) {
  if (type_ != Type::kObject) return;
  std::erase_if(members_, [&](const auto& m) { return m.first == key; });
  if (value != nullptr) members_.emplace_back(std::string(key), *value);
}

namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<JsonValue> ParseDocument() {
    // JSON text is UTF-8 (RFC 8259 §8.1); vLLM's server answers 400 to
    // anything else, and the prompt's words must be text.
    if (size_t bad = FirstInvalidUtf8(text_); bad != text_.size()) {
      pos_ = bad;
      return Error("not UTF-8");
    }
    absl::StatusOr<JsonValue> v = ParseValue(0);
    if (!v.ok()) return v;
    SkipSpace();
    if (pos_ != text_.size()) return Error("trailing characters after JSON value");
    return v;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("malformed JSON at byte ", pos_, ": ", what));
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Consume(absl::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  absl::StatusOr<JsonValue> ParseValue(int depth) {
    if (depth > kMaxDepth) return Error("nesting too deep");
    SkipSpace();
    if (pos_ >= text_.size()) return Error("unexpected end of input");
    char c = text_[pos_];
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
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber();
    return Error("unexpected character");
  }

  absl::StatusOr<JsonValue> ParseNumber() {
    size_t start = pos_;
    bool integer = true;
    if (text_[pos_] == '-') ++pos_;
    auto digits = [&] {
      size_t d = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - d;
    };
    if (digits() == 0) return Error("bad number");
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integer = false;
      ++pos_;
      if (digits() == 0) return Error("bad number");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integer = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) return Error("bad number");
    }
    std::string literal(text_.substr(start, pos_ - start));
    double d = std::strtod(literal.c_str(), nullptr);
    if (!std::isfinite(d)) return Error("number out of range");
    return JsonValue::Number(d, integer);
  }

  static void AppendUtf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  absl::StatusOr<uint32_t> ParseHex4() {
    if (pos_ + 4 > text_.size()) return Error("short \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char h = text_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9')
        v |= h - '0';
      else if (h >= 'a' && h <= 'f')
        v |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F')
        v |= h - 'A' + 10;
      else
        return Error("bad \\u escape");
    }
    return v;
  }

  absl::StatusOr<std::string> ParseString() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) return Error("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) return Error("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          absl::StatusOr<uint32_t> cp = ParseHex4();
          if (!cp.ok()) return cp.status();
          uint32_t code = *cp;
          // A surrogate only stands in a high + low pair: alone it is no
          // character, and would make the string invalid UTF-8.
          if (code >= 0xDC00 && code <= 0xDFFF) return Error("lone surrogate in \\u escape");
          if (code >= 0xD800 && code <= 0xDBFF) {
            if (!Consume("\\u")) return Error("lone surrogate in \\u escape");
            absl::StatusOr<uint32_t> low = ParseHex4();
            if (!low.ok()) return low.status();
            if (*low < 0xDC00 || *low > 0xDFFF) return Error("lone surrogate in \\u escape");
            code = 0x10000 + ((code - 0xD800) << 10) + (*low - 0xDC00);
          }
          AppendUtf8(code, out);
          break;
        }
        default:
          return Error("bad escape");
      }
    }
  }

  absl::StatusOr<JsonValue> ParseArray(int depth) {
    ++pos_;
    std::vector<JsonValue> items;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return JsonValue::Array(std::move(items));
    }
    while (true) {
      absl::StatusOr<JsonValue> item = ParseValue(depth + 1);
      if (!item.ok()) return item;
      items.push_back(*std::move(item));
      SkipSpace();
      if (pos_ >= text_.size()) return Error("unterminated array");
      char c = text_[pos_++];
      if (c == ']') return JsonValue::Array(std::move(items));
      if (c != ',') return Error("expected ',' or ']'");
    }
  }

  absl::StatusOr<JsonValue> ParseObject(int depth) {
    ++pos_;
    std::vector<std::pair<std::string, JsonValue>> members;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return JsonValue::Object(std::move(members));
    }
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') return Error("expected member name");
      absl::StatusOr<std::string> key = ParseString();
      if (!key.ok()) return key.status();
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_++] != ':') return Error("expected ':'");
      absl::StatusOr<JsonValue> value = ParseValue(depth + 1);
      if (!value.ok()) return value;
      members.emplace_back(*std::move(key), *std::move(value));
      SkipSpace();
      if (pos_ >= text_.size()) return Error("unterminated object");
      char c = text_[pos_++];
      if (c == '}') return JsonValue::Object(std::move(members));
      if (c != ',') return Error("expected ',' or '}'");
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

// An escaped lone surrogate is valid JSON to simdjson, and unescapes to
// bytes that are not UTF-8; the hand-written reader refuses it.
bool IsUtf8(std::string_view s) {
  return FirstInvalidUtf8(absl::string_view(s.data(), s.size())) == s.size();
}

// simdjson's tree as a JsonValue; nullopt for what the hand-written reader
// must decide (see ParseJson in json.h).
std::optional<JsonValue> FromSimdjson(simdjson::dom::element e, int depth) {
  using simdjson::dom::element_type;
  if (depth > kMaxDepth) return std::nullopt;
  switch (e.type()) {
    case element_type::NULL_VALUE:
      return JsonValue();
    case element_type::BOOL:
      return JsonValue::Bool(e.get_bool().value_unsafe());
    case element_type::INT64:
      return JsonValue::Number(static_cast<double>(e.get_int64().value_unsafe()), true);
    case element_type::UINT64:
      return JsonValue::Number(static_cast<double>(e.get_uint64().value_unsafe()), true);
    case element_type::DOUBLE:
      return JsonValue::Number(e.get_double().value_unsafe(), false);
    case element_type::STRING: {
      const std::string_view s = e.get_string().value_unsafe();
      if (!IsUtf8(s)) return std::nullopt;
      return JsonValue::String(std::string(s));
    }
    case element_type::ARRAY: {
      const simdjson::dom::array array = e.get_array().value_unsafe();
      std::vector<JsonValue> items;
      items.reserve(array.size());
      for (simdjson::dom::element item : array) {
        std::optional<JsonValue> v = FromSimdjson(item, depth + 1);
        if (!v.has_value()) return std::nullopt;
        items.push_back(*std::move(v));
      }
      return JsonValue::Array(std::move(items));
    }
    case element_type::OBJECT: {
      const simdjson::dom::object object = e.get_object().value_unsafe();
      std::vector<std::pair<std::string, JsonValue>> members;
      members.reserve(object.size());
      for (simdjson::dom::key_value_pair member : object) {
        if (!IsUtf8(member.key)) return std::nullopt;
        std::optional<JsonValue> v = FromSimdjson(member.value, depth + 1);
        if (!v.has_value()) return std::nullopt;
        members.emplace_back(std::string(member.key), *std::move(v));
      }
      return JsonValue::Object(std::move(members));
    }
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<JsonValue> ParseJson(absl::string_view text) {
  // One parser per thread keeps its buffers between requests.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(text.data(), text.size()).get(root) == simdjson::SUCCESS) {
    if (std::optional<JsonValue> v = FromSimdjson(root, 0); v.has_value()) return *std::move(v);
  }
  return ParseJsonByHand(text);
}

absl::StatusOr<JsonValue> ParseJsonByHand(absl::string_view text) {
  return Parser(text).ParseDocument();
}

namespace {
void AppendJson(const JsonValue& v, std::string& out) {
  switch (v.type()) {
    case JsonValue::Type::kNull:
      out += "null";
      return;
    case JsonValue::Type::kBool:
      out += v.bool_value() ? "true" : "false";
      return;
    case JsonValue::Type::kNumber:
      if (v.is_integer()) {
        absl::StrAppend(&out, v.int_value());
      } else {
        char buf[32];
        snprintf(buf, sizeof(buf), "%.17g", v.number());
        out += buf;
        // An integral double (100.0, -0.0) must not read back as an integer.
        if (std::string_view(buf).find_first_of(".eE") == std::string_view::npos) out += ".0";
      }
      return;
    case JsonValue::Type::kString:
      out += JsonQuote(v.string_value());
      return;
    case JsonValue::Type::kArray: {
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i > 0) out += ',';
        AppendJson(v.items()[i], out);
      }
      out += ']';
      return;
    }
    case JsonValue::Type::kObject: {
      out += '{';
      for (size_t i = 0; i < v.members().size(); ++i) {
        if (i > 0) out += ',';
        out += JsonQuote(v.members()[i].first);
        out += ':';
        AppendJson(v.members()[i].second, out);
      }
      out += '}';
      return;
    }
  }
}
}  // namespace

std::string ToJson(const JsonValue& value) {
  std::string out;
  AppendJson(value, out);
  return out;
}

std::string JsonQuote(absl::string_view s) { return servelab::JsonQuote(s); }

}  // namespace servelab::sim
