// Just enough PNG decoding for a test to look at a browser screenshot:
// 8-bit RGB or RGBA, not interlaced (what Chromium writes).
//
//   absl::StatusOr<PngImage> image = DecodePng(ReadFile(png_path));
//   EXPECT_GT(DistinctColors(*image), 8);
//
// Errors: INVALID_ARGUMENT for a file that is not such a PNG. Pure
// functions; thread-compatible.
#ifndef SERVELAB_CLIENT_REPORT_TESTING_PNG_PIXELS_H_
#define SERVELAB_CLIENT_REPORT_TESTING_PNG_PIXELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace servelab::client::report::testing {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

struct PngImage {
  int width = 0;
  int height = 0;
  std::vector<Rgb> pixels;  // Row by row; alpha dropped.
};

absl::StatusOr<PngImage> DecodePng(const std::string& bytes);

// How many different colours the image holds.
size_t DistinctColors(const PngImage& image);

// Pixels within `tolerance` of `color` on every channel.
size_t PixelsNear(const PngImage& image, Rgb color, int tolerance);

}  // namespace servelab::client::report::testing

#endif  // SERVELAB_CLIENT_REPORT_TESTING_PNG_PIXELS_H_
