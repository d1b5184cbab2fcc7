// Typed reads from a parsed JSON tree for the import parsers. Each failure is
// INVALID_ARGUMENT "<path>: <what was expected>, got <what is there>", so the
// parser only prefixes the file name (and line) to get a message that points
// at the broken field, e.g. "result.json: itls[3][1]: expected a number, got a string".
#ifndef SERVELAB_CLIENT_IMPORT_FIELDS_H_
#define SERVELAB_CLIENT_IMPORT_FIELDS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/import/json_value.h"

namespace servelab::client::import {

// "<path>: <message>" as INVALID_ARGUMENT.
absl::Status FieldError(std::string_view path, std::string_view message);

// `path[index]`.
std::string ElementPath(std::string_view path, size_t index);

// The member `key` of `object`; an error naming `key` when absent.
absl::StatusOr<const JsonValue*> RequireMember(const JsonValue& object, std::string_view key);

// A finite number >= 0: times in seconds. NaN, infinities and negative
// values are errors, since a record built from them would be nonsense.
absl::StatusOr<double> NonNegativeSeconds(const JsonValue& value, std::string_view path);

// A finite number (an absolute clock reading, which may have any sign).
absl::StatusOr<double> FiniteNumber(const JsonValue& value, std::string_view path);

// An integral number in [0, 2^31): token counts.
absl::StatusOr<int32_t> TokenCount(const JsonValue& value, std::string_view path);

// A list; `what` names its elements in the error ("a list of numbers").
absl::StatusOr<const std::vector<JsonValue>*> List(const JsonValue& value, std::string_view path,
                                                   std::string_view what);

// A list of NonNegativeSeconds.
absl::StatusOr<std::vector<double>> SecondsList(const JsonValue& value, std::string_view path);

// How far from the load start a record's time may lie, in seconds (about 31
// years): no load lasts longer, and int64 nanoseconds summed from such times
// would overflow.
inline constexpr double kMaxSecondsFromLoadStart = 1e9;

// An error naming `path` when `seconds` (from the load start) is beyond
// kMaxSecondsFromLoadStart or not a number.
absl::Status WithinLoad(double seconds, std::string_view path);

// Conversions to the records' int64 nanoseconds, rounding to nearest; only
// for seconds that passed WithinLoad.
int64_t SecondsToNs(double seconds);

}  // namespace servelab::client::import

#endif  // SERVELAB_CLIENT_IMPORT_FIELDS_H_
