#include "daemon/service/state_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace servelab::service {
namespace {

std::string ReadHolderPid(int fd) {
  char buffer[32] = {};
  ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
  if (n <= 0) return "unknown";
  std::string pid(buffer, static_cast<size_t>(n));
  absl::StripAsciiWhitespace(&pid);
  return pid.empty() ? "unknown" : pid;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StateDirLock>> StateDirLock::Acquire(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot open lock file ", path, ": ", strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    std::string holder = ReadHolderPid(fd);
    close(fd);
    if (error == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("another servelabd (pid ", holder, ") owns this state directory: ", path,
                       " is locked; one daemon per state directory"));
    }
    return absl::InternalError(absl::StrCat("cannot lock ", path, ": ", strerror(error)));
  }
  std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    int error = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("cannot write pid to ", path, ": ", strerror(error)));
  }
  return std::unique_ptr<StateDirLock>(new StateDirLock(path, fd));
}

StateDirLock::~StateDirLock() {
  // Leave the file: unlinking a lock file races with the next daemon's open.
  close(fd_);
}

}  // namespace servelab::service
