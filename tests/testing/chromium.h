// Headless Chromium for tests that check what a browser makes of a page,
// such as the HTML report: a screenshot, or the DOM after loading. Each call
// runs /usr/bin/chromium once (argv through Run, no shell) with a fresh
// profile in a temp dir, so runs share no state.
//
//   if (ChromiumPath().empty()) GTEST_SKIP() << "no /usr/bin/chromium";
//   ASSERT_THAT(ChromiumScreenshot(html, png), IsOk());
//   absl::StatusOr<std::string> dom = ChromiumDumpDom(html);
//
// Errors: INTERNAL with Chromium's exit code and the end of its stderr when
// it fails, DEADLINE_EXCEEDED when it outlives options.timeout.
// Thread-compatible.
#ifndef SERVELAB_TESTS_TESTING_CHROMIUM_H_
#define SERVELAB_TESTS_TESTING_CHROMIUM_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace servelab::testing {

// "/usr/bin/chromium" when that is an executable file, else "".
std::string ChromiumPath();

struct ChromiumOptions {
  int width = 1200;
  int height = 2400;
  absl::Duration timeout = absl::Seconds(120);
};

// A file:// URL for an absolute path, percent-encoding what a URL path may
// not hold as is.
std::string FileUrl(const std::string& absolute_path);

// Loads `html_path` (absolute) and writes a PNG of the window, width x
// height pixels, to `png_path`.
absl::Status ChromiumScreenshot(const std::string& html_path, const std::string& png_path,
                                const ChromiumOptions& options = {});

// Loads `html_path` (absolute) and returns the resulting DOM as HTML.
absl::StatusOr<std::string> ChromiumDumpDom(const std::string& html_path,
                                            const ChromiumOptions& options = {});

}  // namespace servelab::testing

#endif  // SERVELAB_TESTS_TESTING_CHROMIUM_H_
