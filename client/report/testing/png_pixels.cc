#include "client/report/testing/png_pixels.h"

#include <zlib.h>

#include <cstdlib>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace servelab::client::report::testing {
namespace {

uint32_t BigEndian32(const std::string& s, size_t at) {
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(s[at + i])); };
  return byte(0) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3);
}

int Paeth(int a, int b, int c) {
  int p = a + b - c;
  int pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

// Undoes the per-row filters in place; `raw` is (1 + stride) bytes a row.
absl::Status Unfilter(std::vector<uint8_t>& raw, int height, size_t stride, int bpp,
                      std::vector<uint8_t>* out) {
  out->assign(stride * height, 0);
  for (int y = 0; y < height; ++y) {
    uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    uint8_t* row = &(*out)[y * stride];
    const uint8_t* up = y > 0 ? &(*out)[(y - 1) * stride] : nullptr;
    for (size_t x = 0; x < stride; ++x) {
      int a = x >= static_cast<size_t>(bpp) ? row[x - bpp] : 0;
      int b = up ? up[x] : 0;
      int c = up && x >= static_cast<size_t>(bpp) ? up[x - bpp] : 0;
      int predictor = filter == 0   ? 0
                      : filter == 1 ? a
                      : filter == 2 ? b
                      : filter == 3 ? (a + b) / 2
                      : filter == 4 ? Paeth(a, b, c)
                                    : -1;
      if (predictor < 0) return absl::InvalidArgumentError(absl::StrCat("filter ", filter));
      row[x] = static_cast<uint8_t>(in[x] + predictor);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PngImage> DecodePng(const std::string& bytes) {
  if (bytes.size() < 33 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) {
    return absl::InvalidArgumentError("not a PNG");
  }
  PngImage image;
  image.width = static_cast<int>(BigEndian32(bytes, 16));
  image.height = static_cast<int>(BigEndian32(bytes, 20));
  uint8_t depth = bytes[24], color_type = bytes[25], interlace = bytes[28];
  if (depth != 8 || (color_type != 2 && color_type != 6) || interlace != 0) {
    return absl::InvalidArgumentError("only 8-bit RGB(A), not interlaced");
  }
  std::string idat;
  for (size_t at = 8; at + 12 <= bytes.size();) {
    uint32_t length = BigEndian32(bytes, at);
    if (bytes.compare(at + 4, 4, "IDAT") == 0) idat.append(bytes, at + 8, length);
    at += 12 + length;
  }
  const int bpp = color_type == 6 ? 4 : 3;
  const size_t stride = static_cast<size_t>(image.width) * bpp;
  std::vector<uint8_t> raw((stride + 1) * image.height);
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
          Z_OK ||
      raw_size != raw.size()) {
    return absl::InvalidArgumentError("bad image data");
  }
  std::vector<uint8_t> data;
  if (absl::Status s = Unfilter(raw, image.height, stride, bpp, &data); !s.ok()) return s;
  image.pixels.reserve(static_cast<size_t>(image.width) * image.height);
  for (size_t i = 0; i < data.size(); i += bpp) {
    image.pixels.push_back({data[i], data[i + 1], data[i + 2]});
  }
  return image;
}

size_t DistinctColors(const PngImage& image) {
  std::set<uint32_t> colors;
  for (const Rgb& p : image.pixels) colors.insert(p.r << 16 | p.g << 8 | p.b);
  return colors.size();
}

size_t PixelsNear(const PngImage& image, Rgb color, int tolerance) {
  size_t count = 0;
  for (const Rgb& p : image.pixels) {
    count += std::abs(p.r - color.r) <= tolerance && std::abs(p.g - color.g) <= tolerance &&
             std::abs(p.b - color.b) <= tolerance;
  }
  return count;
}

}  // namespace servelab::client::report::testing
