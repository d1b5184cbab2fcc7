// Reading a file a user named, safely: only a regular file (after symlinks)
// of at most a stated size is opened, so a FIFO never blocks the caller, a
// symlink to /dev/zero is never read forever, and a directory is named as
// one (issue 10, R3).
//
//   absl::StatusOr<std::string> text = ReadRegularFile(path, kMaxSpecFileBytes);
//   absl::StatusOr<RegularFile> f = RegularFile::Open(path, kMaxReferencedFileBytes);
//   read(f->fd(), ...);  // At most f->size() bytes are expected.
//
// Errors: NOT_FOUND (no such file), PERMISSION_DENIED, INVALID_ARGUMENT
// (not a regular file: "is a FIFO"; or over the limit), each naming the path.
// Thread-safe.
#ifndef SERVELAB_COMMON_REGULAR_FILE_H_
#define SERVELAB_COMMON_REGULAR_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace servelab {

// A spec file: gRPC's default message limit, which the daemon keeps.
inline constexpr int64_t kMaxSpecFileBytes = int64_t{4} << 20;
// A file a spec references (expert layout, prompt file), hashed at freeze.
inline constexpr int64_t kMaxReferencedFileBytes = int64_t{4} << 30;
// A result file `servelab import` reads whole.
inline constexpr int64_t kMaxResultFileBytes = int64_t{1} << 30;

// An open regular file; closed when destroyed. Move-only.
class RegularFile {
 public:
  static absl::StatusOr<RegularFile> Open(const std::string& path, int64_t max_bytes);
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  int fd() const { return fd_; }
  int64_t size() const { return size_; }  // At open.

 private:
  RegularFile(int fd, int64_t size) : fd_(fd), size_(size) {}
  int fd_ = -1;
  int64_t size_ = 0;
};

// The whole file; INVALID_ARGUMENT also when it grew past `max_bytes` while
// being read.
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes);

}  // namespace servelab

#endif  // SERVELAB_COMMON_REGULAR_FILE_H_
