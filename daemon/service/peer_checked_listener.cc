#include "daemon/service/peer_checked_listener.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "daemon/service/logging.h"

namespace servelab::service {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", strerror(errno)));
}

// The connection backlog: clients retry on their own, so a short queue is
// enough; 128 covers a burst of CLI calls from scripts.
constexpr int kBacklog = 128;

}  // namespace

absl::StatusOr<std::unique_ptr<PeerCheckedListener>> PeerCheckedListener::Create(
    const std::string& path, std::vector<uid_t> allowed_uids, AcceptFn accept) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::UnavailableError(absl::StrCat("cannot listen on unix:", path, ": longer than ",
                                               sizeof(addr.sun_path) - 1, " bytes"));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket for", path);
  // bind() creates the file; a tight umask closes the window before chmod.
  mode_t old_umask = umask(0077);
  int bound = bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  umask(old_umask);
  if (bound != 0) {
    absl::Status error =
        absl::UnavailableError(absl::StrCat("cannot listen on unix:", path, ": ", strerror(errno)));
    close(fd);
    return error;
  }
  if (chmod(path.c_str(), 0600) != 0 || listen(fd, kBacklog) != 0) {
    absl::Status error = Errno("cannot set up socket", path);
    close(fd);
    unlink(path.c_str());
    return error;
  }
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) {
    absl::Status error = Errno("cannot make a wake pipe for", path);
    close(fd);
    unlink(path.c_str());
    return error;
  }
  auto listener = std::unique_ptr<PeerCheckedListener>(
      new PeerCheckedListener(fd, wake[0], wake[1], std::move(allowed_uids), std::move(accept)));
  listener->thread_ = std::thread([l = listener.get()] { l->AcceptLoop(); });
  return listener;
}

PeerCheckedListener::PeerCheckedListener(int listen_fd, int wake_read, int wake_write,
                                         std::vector<uid_t> allowed, AcceptFn accept)
    : listen_fd_(listen_fd),
      wake_read_(wake_read),
      wake_write_(wake_write),
      allowed_uids_(std::move(allowed)),
      accept_(std::move(accept)) {}

PeerCheckedListener::~PeerCheckedListener() {
  Shutdown();
  close(listen_fd_);
  close(wake_read_);
  close(wake_write_);
}

void PeerCheckedListener::Shutdown() {
  if (!thread_.joinable()) return;
  char byte = 0;
  while (write(wake_write_, &byte, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
}

void PeerCheckedListener::AcceptLoop() {
  pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
  while (true) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      Logger("daemon")->error("poll on the gRPC socket failed: {}", strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // EMFILE and the like: the client sees a refused call and retries.
      if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
        Logger("daemon")->warn("accept on the gRPC socket failed: {}", strerror(errno));
      }
      continue;
    }
    HandOver(fd);
  }
}

void PeerCheckedListener::HandOver(int fd) {
  ucred peer{};
  socklen_t len = sizeof(peer);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) {
    Logger("daemon")->warn("refused a connection: SO_PEERCRED failed: {}", strerror(errno));
    refused_.fetch_add(1);
    close(fd);
    return;
  }
  if (std::find(allowed_uids_.begin(), allowed_uids_.end(), peer.uid) == allowed_uids_.end()) {
    Logger("daemon")->warn("refused a connection from uid {} (pid {}): not the daemon's user",
                           peer.uid, peer.pid);
    refused_.fetch_add(1);
    close(fd);
    return;
  }
  accept_(fd);
}

}  // namespace servelab::service
