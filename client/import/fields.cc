#include "client/import/fields.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace servelab::client::import {
namespace {

// Debian's abseil has its own string_view, which std::string_view does not
// convert to.
absl::string_view Sv(std::string_view s) { return {s.data(), s.size()}; }

absl::Status Expected(std::string_view path, std::string_view what, const JsonValue& got) {
  return FieldError(path, absl::StrCat("expected ", Sv(what), ", got ", KindName(got.kind())));
}

}  // namespace

absl::Status FieldError(std::string_view path, std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(Sv(path), ": ", Sv(message)));
}

std::string ElementPath(std::string_view path, size_t index) {
  return absl::StrCat(Sv(path), "[", index, "]");
}

absl::StatusOr<const JsonValue*> RequireMember(const JsonValue& object, std::string_view key) {
  const JsonValue* member = object.Find(key);
  if (member == nullptr) return FieldError(key, "missing");
  return member;
}

absl::StatusOr<double> FiniteNumber(const JsonValue& value, std::string_view path) {
  if (!value.is_number()) return Expected(path, "a number", value);
  if (!std::isfinite(value.number())) {
    return FieldError(path, absl::StrCat("expected a finite number, got ", value.number()));
  }
  return value.number();
}

absl::StatusOr<double> NonNegativeSeconds(const JsonValue& value, std::string_view path) {
  absl::StatusOr<double> seconds = FiniteNumber(value, path);
  if (!seconds.ok()) return seconds;
  if (*seconds < 0) {
    return FieldError(path, absl::StrCat("expected a time >= 0 seconds, got ", *seconds));
  }
  return seconds;
}

absl::StatusOr<int32_t> TokenCount(const JsonValue& value, std::string_view path) {
  absl::StatusOr<double> count = FiniteNumber(value, path);
  if (!count.ok()) return count.status();
  if (*count < 0 || *count != std::floor(*count) || *count > std::numeric_limits<int32_t>::max()) {
    return FieldError(path, absl::StrCat("expected a token count (an integer >= 0), got ", *count));
  }
  return static_cast<int32_t>(*count);
}

absl::StatusOr<const std::vector<JsonValue>*> List(const JsonValue& value, std::string_view path,
                                                   std::string_view what) {
  if (!value.is_array()) return Expected(path, what, value);
  return &value.array();
}

absl::StatusOr<std::vector<double>> SecondsList(const JsonValue& value, std::string_view path) {
  absl::StatusOr<const std::vector<JsonValue>*> items = List(value, path, "a list of numbers");
  if (!items.ok()) return items.status();
  std::vector<double> out;
  out.reserve((*items)->size());
  for (size_t i = 0; i < (*items)->size(); ++i) {
    absl::StatusOr<double> s = NonNegativeSeconds((**items)[i], ElementPath(path, i));
    if (!s.ok()) return s.status();
    out.push_back(*s);
  }
  return out;
}

absl::Status WithinLoad(double seconds, std::string_view path) {
  if (std::fabs(seconds) <= kMaxSecondsFromLoadStart) return absl::OkStatus();
  return FieldError(path, absl::StrCat(seconds,
                                       " s from the load start (the earliest time in the file); "
                                       "times more than 1e9 s (31 years) from it are refused"));
}

int64_t SecondsToNs(double seconds) { return std::llround(seconds * 1e9); }

}  // namespace servelab::client::import
