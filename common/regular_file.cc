#include "common/regular_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace servelab {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

absl::Status OpenError(const std::string& path, int err) {
  if (err == ENOENT) return absl::NotFoundError(absl::StrCat("file \"", path, "\" does not exist"));
  if (err == EACCES || err == EPERM) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot read \"", path, "\": ", std::strerror(err)));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("cannot read \"", path, "\": ", std::strerror(err)));
}

absl::Status TooLarge(const std::string& path, int64_t size, int64_t max_bytes) {
  return absl::InvalidArgumentError(
      absl::StrCat("\"", path, "\" is ", size, " bytes, over the limit of ", max_bytes));
}

}  // namespace

absl::StatusOr<RegularFile> RegularFile::Open(const std::string& path, int64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer must not wait for one.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return OpenError(path, errno);
  RegularFile file(fd, 0);
  struct stat st;
  if (fstat(fd, &st) != 0) return OpenError(path, errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", path, "\" is ", KindOf(st.st_mode), ", not a regular file"));
  }
  if (st.st_size > max_bytes) return TooLarge(path, st.st_size, max_bytes);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  file.size_ = st.st_size;
  return file;
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes) {
  absl::StatusOr<RegularFile> file = RegularFile::Open(path, max_bytes);
  if (!file.ok()) return file.status();
  std::string content;
  content.reserve(static_cast<size_t>(file->size()));
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(file->fd(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return OpenError(path, errno);
    if (n == 0) return content;
    content.append(buffer, static_cast<size_t>(n));
    if (static_cast<int64_t>(content.size()) > max_bytes) {
      return TooLarge(path, static_cast<int64_t>(content.size()), max_bytes);
    }
  }
}

}  // namespace servelab
