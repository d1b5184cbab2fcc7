#include "tests/testing/chromium.h"

#include <unistd.h>

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::testing {
namespace {

constexpr char kChromium[] = "/usr/bin/chromium";
constexpr size_t kStderrTail = 2000;

// Runs Chromium headless on `url` with `extra` flags. The profile, HOME and
// caches live in a temp dir: nothing is read from or left in the real home.
// --no-sandbox because tests may run as root (in containers); no GPU and no
// background networking, so the run is hermetic.
absl::StatusOr<RunResult> RunChromium(const std::string& url, std::vector<std::string> extra,
                                      const ChromiumOptions& options) {
  TempDir profile;
  std::vector<std::string> argv = {
      kChromium,
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--disable-background-networking",
      "--disable-extensions",
      "--no-first-run",
      "--no-default-browser-check",
      "--hide-scrollbars",
      absl::StrCat("--user-data-dir=", profile.File("profile")),
      absl::StrCat("--window-size=", options.width, ",", options.height)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(url);
  RunResult result = Run(argv,
                         {absl::StrCat("HOME=", profile.path()),
                          absl::StrCat("XDG_CONFIG_HOME=", profile.File("config")),
                          absl::StrCat("XDG_CACHE_HOME=", profile.File("cache"))},
                         options.timeout);
  if (result.exit_code == -1) {
    return absl::DeadlineExceededError(
        absl::StrCat("chromium did not finish within ", absl::FormatDuration(options.timeout)));
  }
  if (result.exit_code != 0) {
    std::string tail = result.err.size() > kStderrTail
                           ? result.err.substr(result.err.size() - kStderrTail)
                           : result.err;
    return absl::InternalError(absl::StrCat("chromium exited ", result.exit_code, ": ", tail));
  }
  return result;
}

}  // namespace

std::string ChromiumPath() { return access(kChromium, X_OK) == 0 ? kChromium : ""; }

std::string FileUrl(const std::string& absolute_path) {
  std::string url = "file://";
  for (unsigned char c : absolute_path) {
    if (absl::ascii_isalnum(c) || c == '/' || c == '.' || c == '-' || c == '_' || c == '~') {
      url += static_cast<char>(c);
    } else {
      constexpr char kHex[] = "0123456789ABCDEF";
      url += '%';
      url += kHex[c >> 4];
      url += kHex[c & 0xf];
    }
  }
  return url;
}

absl::Status ChromiumScreenshot(const std::string& html_path, const std::string& png_path,
                                const ChromiumOptions& options) {
  absl::StatusOr<RunResult> result =
      RunChromium(FileUrl(html_path), {absl::StrCat("--screenshot=", png_path)}, options);
  if (!result.ok()) return result.status();
  if (!FileExists(png_path)) {
    return absl::InternalError(absl::StrCat("chromium wrote no screenshot: ", result->err));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ChromiumDumpDom(const std::string& html_path,
                                            const ChromiumOptions& options) {
  absl::StatusOr<RunResult> result = RunChromium(FileUrl(html_path), {"--dump-dom"}, options);
  if (!result.ok()) return result.status();
  return std::move(result->out);
}

}  // namespace servelab::testing
