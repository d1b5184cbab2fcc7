// PeerCheckedListener: servelabd's unix socket, with the peer's user checked
// before a connection reaches gRPC (docs/design.md §13). The socket is created
// 0600 under umask 0077, so another user cannot connect at all; the
// SO_PEERCRED check is what still holds if the mode is loosened by hand or
// the socket is passed elsewhere. A connection from any uid but the allowed
// ones is closed at once and logged with the peer's uid and pid; nothing of
// it reaches the service.
//
//   SERVELAB_ASSIGN_OR_RETURN(auto listener,
//       PeerCheckedListener::Create(path, {geteuid(), 0},
//                                   [&](int fd) { grpc::AddInsecureChannelFromFd(server, fd); }));
//   ...
//   listener->Shutdown();  // stops accepting; connections already handed over stay
//
// Errors from Create: UNAVAILABLE when the path cannot be bound (in use,
// too long for sun_path, directory missing), INTERNAL for other socket calls.
// Thread-safe: one accept thread owns the socket; refused() may be read from
// any thread; Shutdown is called from the owner's thread.
#ifndef SERVELAB_DAEMON_SERVICE_PEER_CHECKED_LISTENER_H_
#define SERVELAB_DAEMON_SERVICE_PEER_CHECKED_LISTENER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace servelab::service {

class PeerCheckedListener {
 public:
  // Takes ownership of a connected, non-blocking, close-on-exec fd.
  using AcceptFn = std::function<void(int fd)>;

  static absl::StatusOr<std::unique_ptr<PeerCheckedListener>> Create(
      const std::string& path, std::vector<uid_t> allowed_uids, AcceptFn accept);
  ~PeerCheckedListener();
  PeerCheckedListener(const PeerCheckedListener&) = delete;
  PeerCheckedListener& operator=(const PeerCheckedListener&) = delete;

  // Stops the accept thread and closes the listening socket; idempotent.
  void Shutdown();

  // Connections closed because their peer's uid was not allowed.
  int64_t refused() const { return refused_.load(); }

 private:
  PeerCheckedListener(int listen_fd, int wake_read, int wake_write, std::vector<uid_t> allowed,
                      AcceptFn accept);
  void AcceptLoop();
  void HandOver(int fd);

  // Constant after construction.
  const int listen_fd_;
  const int wake_read_;
  const int wake_write_;
  const std::vector<uid_t> allowed_uids_;
  const AcceptFn accept_;

  std::atomic<int64_t> refused_{0};
  std::thread thread_;
};

}  // namespace servelab::service

#endif  // SERVELAB_DAEMON_SERVICE_PEER_CHECKED_LISTENER_H_
