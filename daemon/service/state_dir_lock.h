// StateDirLock: the one-owner rule of docs/design.md §8. An exclusive flock on
// DIR/servelabd.lock, held for the daemon's lifetime, with the holder's pid
// written into the file so that a second daemon can say who owns the
// directory. The kernel releases the lock when the process dies, so a crash
// never leaves a stale owner; the file itself stays.
//
//   SERVELAB_ASSIGN_OR_RETURN(auto lock, StateDirLock::Acquire(dir + "/servelabd.lock"));
//
// Errors: FAILED_PRECONDITION naming the holder's pid when another process
// (or another open of the file) holds the lock; INTERNAL for I/O errors.
// Not thread-safe; immutable after Acquire.
#ifndef SERVELAB_DAEMON_SERVICE_STATE_DIR_LOCK_H_
#define SERVELAB_DAEMON_SERVICE_STATE_DIR_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace servelab::service {

class StateDirLock {
 public:
  static absl::StatusOr<std::unique_ptr<StateDirLock>> Acquire(const std::string& path);
  ~StateDirLock();
  StateDirLock(const StateDirLock&) = delete;
  StateDirLock& operator=(const StateDirLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  StateDirLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  const std::string path_;
  const int fd_;
};

}  // namespace servelab::service

#endif  // SERVELAB_DAEMON_SERVICE_STATE_DIR_LOCK_H_
