#include "client/import/npy.h"

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace servelab::client::import {
namespace {

static_assert(std::endian::native == std::endian::little,
              "DecodeNpyFloat64 copies little-endian doubles as they are");

constexpr std::string_view kMagic = "\x93NUMPY";

absl::string_view Sv(std::string_view s) { return {s.data(), s.size()}; }

// The quoted value after `'key':` in the header's dict literal.
std::string_view QuotedValue(std::string_view header, std::string_view key) {
  size_t at = header.find(key);
  if (at == std::string_view::npos) return {};
  size_t open = header.find('\'', at + key.size());
  if (open == std::string_view::npos) return {};
  size_t close = header.find('\'', open + 1);
  if (close == std::string_view::npos) return {};
  return header.substr(open + 1, close - open - 1);
}

// The element count of a shape "()" or "(n,)"; -1 for any other shape.
int64_t ElementCount(std::string_view header) {
  size_t at = header.find("'shape':");
  if (at == std::string_view::npos) return -1;
  size_t open = header.find('(', at);
  size_t close = header.find(')', open);
  if (open == std::string_view::npos || close == std::string_view::npos) return -1;
  std::string_view dims = header.substr(open + 1, close - open - 1);
  if (dims.find_first_not_of(' ') == std::string_view::npos) return 1;  // 0-D: one value.
  int64_t n = -1;
  auto [end, ec] = std::from_chars(dims.data(), dims.data() + dims.size(), n);
  if (ec != std::errc() || n < 0) return -1;
  std::string_view rest(end, dims.data() + dims.size() - end);
  if (rest.find_first_not_of(", ") != std::string_view::npos || rest.find(',') == rest.npos) {
    return -1;  // A second dimension, or "(n)" which is not a tuple.
  }
  return n;
}

}  // namespace

absl::StatusOr<std::vector<double>> DecodeNpyFloat64(std::string_view blob) {
  if (blob.size() < kMagic.size() + 2 || blob.substr(0, kMagic.size()) != kMagic) {
    return absl::InvalidArgumentError("not a .npy array (no \\x93NUMPY magic)");
  }
  auto major = static_cast<uint8_t>(blob[kMagic.size()]);
  size_t len_bytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (len_bytes == 0)
    return absl::InvalidArgumentError(absl::StrCat(".npy version ", major, " is unknown"));
  size_t prefix = kMagic.size() + 2 + len_bytes;
  if (blob.size() < prefix) return absl::InvalidArgumentError(".npy header is truncated");
  uint32_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) {
    header_len |= static_cast<uint32_t>(static_cast<uint8_t>(blob[kMagic.size() + 2 + i]))
                  << (8 * i);
  }
  if (blob.size() < prefix + header_len)
    return absl::InvalidArgumentError(".npy header is truncated");
  std::string_view header = blob.substr(prefix, header_len);
  std::string_view descr = QuotedValue(header, "'descr':");
  if (descr != "<f8") {
    return absl::InvalidArgumentError(
        absl::StrCat(".npy dtype is '", Sv(descr), "', expected '<f8' (float64)"));
  }
  int64_t n = ElementCount(header);
  if (n < 0) return absl::InvalidArgumentError(".npy array is not one-dimensional");
  std::string_view data = blob.substr(prefix + header_len);
  if (data.size() != static_cast<size_t>(n) * sizeof(double)) {
    return absl::InvalidArgumentError(
        absl::StrCat(".npy array of ", n, " float64 values has ", data.size(), " data bytes"));
  }
  std::vector<double> values(static_cast<size_t>(n));
  if (n > 0) std::memcpy(values.data(), data.data(), data.size());
  return values;
}

}  // namespace servelab::client::import
