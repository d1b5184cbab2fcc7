// WriteFileAtomically: the whole new content or the old file, never half of
// one. Written to PATH.tmp beside the target (its directory created if
// missing), then renamed over it, so a reader (the CLI reading
// servelabd.addr, an engine reading its config, a browser opening a report)
// sees one or the other.
#ifndef SERVELAB_COMMON_ATOMIC_FILE_H_
#define SERVELAB_COMMON_ATOMIC_FILE_H_

#include <string>

#include "absl/status/status.h"

namespace servelab {

// FAILED_PRECONDITION naming the path and the OS error when it cannot.
absl::Status WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace servelab

#endif  // SERVELAB_COMMON_ATOMIC_FILE_H_
