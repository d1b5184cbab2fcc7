// A small JSON reader and string escaper for request bodies.
//
// Debian 12's Boost 1.74 headers do not ship Boost.JSON, and yaml-cpp's JSON
// flow parsing loses the string/number distinction OpenAI clients rely on
// ("max_tokens": "5" must be a 400), so the sim carries this ~250-line reader.
//
//   absl::StatusOr<JsonValue> v = ParseJson(R"({"prompt": [1, 2]})");
//   const JsonValue* p = v->Find("prompt");  // nullptr when absent
//
// Values are immutable after parsing; safe to read from any thread.
#ifndef SERVELAB_SIM_JSON_H_
#define SERVELAB_SIM_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace servelab::sim {

class JsonValue {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;
  static JsonValue Bool(bool b);
  static JsonValue Number(double d, bool is_integer);
  static JsonValue String(std::string s);
  static JsonValue Array(std::vector<JsonValue> items);
  static JsonValue Object(std::vector<std::pair<std::string, JsonValue>> members);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  // A number written without fraction or exponent, e.g. 12 (not 12.0), that
  // fits int64_t (not 1e20 written out in digits: that is a plain number).
  bool is_integer() const { return type_ == Type::kNumber && is_integer_; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  bool bool_value() const { return bool_; }
  double number() const { return number_; }
  int64_t int_value() const { return static_cast<int64_t>(number_); }
  const std::string& string_value() const { return string_; }
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }

  // Member `key` of an object (last one wins on duplicates); nullptr when this
  // is not an object or has no such member.
  const JsonValue* Find(absl::string_view key) const;
  // Sets member `key` of an object (replacing all existing ones) or removes it
  // when `value` is nullptr. No-op on non-objects.
  void Set(absl::string_view key, const JsonValue* value);

 private:
  Type type_ = Type::kNull;
  bool bool_ = false;
  bool is_integer_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

// Parses one JSON document (RFC 8259). InvalidArgument with the byte offset on
// malformed input; nesting deeper than 64 levels is rejected.
//
// Read by simdjson, about 40 times faster than by hand on a request with an
// 8K-token prompt (bench/json_bench; docs/design.md §10). Whatever simdjson
// refuses or reads differently (an error, an integer beyond 64 bits, nesting
// past 64, a string that is not UTF-8 once unescaped) is read again by hand,
// so the answer and the error text are ParseJsonByHand's.
absl::StatusOr<JsonValue> ParseJson(absl::string_view text);
// The hand-written reader alone: the reference the fast path is tested and
// fuzzed against.
absl::StatusOr<JsonValue> ParseJsonByHand(absl::string_view text);

// `value` serialized compactly: integers without a fraction, other numbers
// always with one or an exponent (100.0), so the text parses back the same.
std::string ToJson(const JsonValue& value);

// `s` as a JSON string literal, quotes included.
std::string JsonQuote(absl::string_view s);

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_JSON_H_
