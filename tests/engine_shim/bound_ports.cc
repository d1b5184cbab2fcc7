#include "tests/engine_shim/bound_ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace servelab::engine_shim {

absl::Status BindAndListen(const std::vector<PortBinding>& bindings) {
  std::vector<int> opened;
  auto fail = [&](const PortBinding& b, const char* step, int error) {
    for (int fd : opened) close(fd);
    return absl::UnavailableError(absl::StrCat("cannot ", step, " ", b.host, ":", b.port, " (",
                                               b.purpose, "): ", std::strerror(error)));
  };
  for (const PortBinding& b : bindings) {
    // No SOCK_CLOEXEC: the socket must outlive execv into servelab-sim.
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return fail(b, "open a socket for", errno);
    // ZMQ's TCP listener (what NIXL and Mooncake bind) sets SO_REUSEADDR; on
    // Linux that still refuses a port another socket listens on.
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(b.port));
    if (inet_pton(AF_INET, b.host.c_str(), &addr.sin_addr) != 1) {
      close(fd);
      return fail(b, "parse the address of", EINVAL);
    }
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      int error = errno;
      close(fd);
      return fail(b, "bind", error);
    }
    if (listen(fd, 16) != 0) {
      int error = errno;
      close(fd);
      return fail(b, "listen on", error);
    }
    opened.push_back(fd);
  }
  return absl::OkStatus();
}

}  // namespace servelab::engine_shim
