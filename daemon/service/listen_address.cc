#include "daemon/service/listen_address.h"

#include <arpa/inet.h>
#include <sys/un.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace servelab::service {

std::string ListenAddress::host_port() const {
  if (absl::StrContains(host, ':')) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

std::string ListenAddress::grpc_uri() const {
  return kind == Kind::kUnix ? absl::StrCat("unix:", path) : host_port();
}

std::string ListenAddress::ToString() const {
  return kind == Kind::kUnix ? absl::StrCat("unix:", path) : absl::StrCat("tcp:", host_port());
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4;
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

absl::StatusOr<ListenAddress> ParseHostPort(const std::string& text, bool allow_remote) {
  ListenAddress address;
  address.kind = ListenAddress::Kind::kTcp;
  std::string port_text;
  if (absl::StartsWith(text, "[")) {
    size_t close = text.find("]:");
    if (close == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad address \"", text, "\": expected [IPV6]:PORT"));
    }
    address.host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || absl::StrContains(text.substr(0, colon), ':')) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad address \"", text, "\": expected HOST:PORT (IPv6 as [::1]:PORT)"));
    }
    address.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  if (!absl::SimpleAtoi(port_text, &address.port) || address.port < 0 || address.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad port \"", port_text, "\" in \"", text, "\": expected 0..65535"));
  }
  if (address.host == "localhost") address.host = "127.0.0.1";
  if (!allow_remote && !IsLoopbackHost(address.host)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "refusing to listen on non-loopback host \"", address.host,
        "\": anyone who can reach it could drive the daemon; pass --allow-remote to mean it"));
  }
  return address;
}

absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& text, bool allow_remote) {
  if (absl::StartsWith(text, "unix:")) {
    ListenAddress address;
    address.path = text.substr(5);
    if (address.path.empty()) {
      return absl::InvalidArgumentError("bad address \"unix:\": expected unix:PATH");
    }
    if (address.path.size() >= sizeof(sockaddr_un{}.sun_path)) {
      return absl::InvalidArgumentError(absl::StrCat("unix socket path \"", address.path,
                                                     "\" is too long (max ",
                                                     sizeof(sockaddr_un{}.sun_path) - 1, ")"));
    }
    return address;
  }
  if (absl::StartsWith(text, "tcp:")) return ParseHostPort(text.substr(4), allow_remote);
  return absl::InvalidArgumentError(
      absl::StrCat("bad address \"", text, "\": expected unix:PATH or tcp:HOST:PORT"));
}

}  // namespace servelab::service
