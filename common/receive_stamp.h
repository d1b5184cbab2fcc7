// When bytes reached a socket, by the kernel's receive stamp: a reader that
// gets to its socket late still learns when the bytes came. The sim stamps a
// request's arrival this way and servelab-load a response's chunks, so that
// neither side's TTFT includes the other side's wait for its own core
// (docs/design.md §10).
//
//   EnableReceiveStamps(fd);  // Once, before the bytes come.
//   StampedRead r = ReceiveStamped(fd, buf, sizeof buf, MSG_DONTWAIT);
//   if (r.bytes > 0) ... r.received ...
//
// A TCP read that takes bytes of several segments is stamped with the last
// one's arrival: never earlier than any of its bytes came. The kernel starts
// stamping a moment after the first socket on the machine asks (a deferred
// switch), so bytes that arrive at once may come unstamped. Thread-safe.
#ifndef SERVELAB_COMMON_RECEIVE_STAMP_H_
#define SERVELAB_COMMON_RECEIVE_STAMP_H_

#include <sys/types.h>

#include <chrono>
#include <cstddef>

namespace servelab {

// SO_TIMESTAMPNS on `fd`; a listener's accepted sockets inherit it. False
// (errno set) when the kernel refuses.
bool EnableReceiveStamps(int fd);

struct StampedRead {
  ssize_t bytes = 0;  // recvmsg's result: -1 on error (errno kept in `error`).
  int error = 0;
  // The kernel's stamp on the steady clock; the time of the call when the
  // kernel gave none (stamps not enabled, or nothing read).
  std::chrono::steady_clock::time_point received;
  bool stamped = false;  // `received` is the kernel's stamp.
};

// recvmsg(fd, data, size, flags) with the receive stamp.
StampedRead ReceiveStamped(int fd, void* data, size_t size, int flags);

}  // namespace servelab

#endif  // SERVELAB_COMMON_RECEIVE_STAMP_H_
