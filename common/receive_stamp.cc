#include "common/receive_stamp.h"

#include <sys/socket.h>
#include <time.h>

#include <cerrno>
#include <cstring>

namespace servelab {

bool EnableReceiveStamps(int fd) {
  int on = 1;
  return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0;
}

StampedRead ReceiveStamped(int fd, void* data, size_t size, int flags) {
  StampedRead r;
  iovec buffer{data, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
  msghdr msg{};
  msg.msg_iov = &buffer;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  r.bytes = recvmsg(fd, &msg, flags);
  if (r.bytes < 0) r.error = errno;
  // Both clocks after the call, so that a stamp is never in the future.
  const auto now = std::chrono::steady_clock::now();
  const auto wall_now = std::chrono::system_clock::now();
  r.received = now;
  if (r.bytes <= 0) return r;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
    timespec stamp;
    std::memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
    // The stamp is wall-clock time: its age, taken off the steady now.
    const std::chrono::nanoseconds age =
        wall_now.time_since_epoch() -
        (std::chrono::seconds(stamp.tv_sec) + std::chrono::nanoseconds(stamp.tv_nsec));
    if (age.count() > 0) {
      r.received = now - age;
      r.stamped = true;
    }
  }
  return r;
}

}  // namespace servelab
