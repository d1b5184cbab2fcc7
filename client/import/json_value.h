// A small JSON reader for `servelab import`, kept apart from protobuf's JSON
// mapping because an import error has to say where the file is broken: the
// parse error names the line and column, and the tree keeps object keys in
// file order so the parsers can name the field that is wrong.
//
//   SERVELAB_ASSIGN_OR_RETURN(JsonValue root, ParseJson(text));
//   const JsonValue* ttfts = root.Find("ttfts");  // null when absent
//
// Besides RFC 8259 it accepts the tokens NaN, Infinity and -Infinity, which
// Python's json.dump writes for non-finite floats: the parsers then reject
// such a value with its field path instead of failing on the whole file.
#ifndef SERVELAB_CLIENT_IMPORT_JSON_VALUE_H_
#define SERVELAB_CLIENT_IMPORT_JSON_VALUE_H_

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"

namespace servelab::client::import {

struct JsonMember;

// An immutable parsed value. Accessors of the wrong kind crash: callers check
// kind() first (the parsers turn a wrong kind into an error naming the field).
class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;
  static JsonValue Bool(bool b);
  static JsonValue Number(double d);
  static JsonValue String(std::string s);
  static JsonValue Array(std::vector<JsonValue> items);
  static JsonValue Object(std::vector<JsonMember> members);

  Kind kind() const { return static_cast<Kind>(value_.index()); }
  bool is_null() const { return kind() == Kind::kNull; }
  bool is_number() const { return kind() == Kind::kNumber; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_array() const { return kind() == Kind::kArray; }
  bool is_object() const { return kind() == Kind::kObject; }

  bool boolean() const { return std::get<bool>(value_); }
  double number() const { return std::get<double>(value_); }
  const std::string& string() const { return std::get<std::string>(value_); }
  const std::vector<JsonValue>& array() const { return std::get<std::vector<JsonValue>>(value_); }
  const std::vector<JsonMember>& object() const {
    return std::get<std::vector<JsonMember>>(value_);
  }

  // The value of the first member named `key`; null when this is not an
  // object or has no such member.
  const JsonValue* Find(std::string_view key) const;

 private:
  // The alternatives are in Kind order.
  std::variant<std::monostate, bool, double, std::string, std::vector<JsonValue>,
               std::vector<JsonMember>>
      value_;
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

// "null", "a boolean", "a number", "a string", "a list", "an object".
const char* KindName(JsonValue::Kind kind);

// Parses one JSON text: a single value with only whitespace around it.
// INVALID_ARGUMENT "line L, column C: <what was expected>" otherwise, with
// 1-based columns (counting bytes) and lines counted from `first_line`, so a
// JSONL reader passes the line's number in its file. Nesting deeper than 64
// levels is rejected, so a hostile file cannot exhaust the stack.
absl::StatusOr<JsonValue> ParseJson(std::string_view text, int first_line = 1);

}  // namespace servelab::client::import

#endif  // SERVELAB_CLIENT_IMPORT_JSON_VALUE_H_
