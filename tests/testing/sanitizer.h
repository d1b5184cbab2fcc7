// What a sanitizer build (deploy/test.sh --sanitize address|thread) changes
// in the figures a test bounds. The processes a test starts are built the
// same way as the test itself, so the test's own build tells.
#ifndef SERVELAB_TESTS_TESTING_SANITIZER_H_
#define SERVELAB_TESTS_TESTING_SANITIZER_H_

#include <cstdint>

namespace servelab::testing {

#if defined(__SANITIZE_ADDRESS__)
// ASan's redzones and its 256 MiB quarantine of freed blocks: 1,000 open
// watches raised the daemon's RSS by 606 MiB under ASan, 250 MiB without.
inline constexpr int64_t kSanitizerMemoryFactor = 3;
// How much longer a process takes: ASan's manual states about 2x; servelabd
// with its sims and CLI calls measured 3-4x here.
inline constexpr int64_t kSanitizerTimeFactor = 4;
#elif defined(SERVELAB_TSAN)  // __SANITIZE_THREAD__ is undefined there (CMakeLists.txt).
// TSan's shadow of every touched byte; its manual states 5-10x memory.
inline constexpr int64_t kSanitizerMemoryFactor = 8;
// TSan's manual states 5-15x the time.
inline constexpr int64_t kSanitizerTimeFactor = 10;
#else
inline constexpr int64_t kSanitizerMemoryFactor = 1;
inline constexpr int64_t kSanitizerTimeFactor = 1;
#endif

}  // namespace servelab::testing

#endif  // SERVELAB_TESTS_TESTING_SANITIZER_H_
