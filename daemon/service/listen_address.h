// ListenAddress: where servelabd listens, parsed from --listen and
// --metrics-listen, with the security defaults of docs/design.md §13 applied: a unix
// socket unless TCP is asked for, and TCP only on loopback unless remote
// access is asked for explicitly.
//
//   absl::StatusOr<ListenAddress> a = ParseListenAddress("tcp:127.0.0.1:0", false);
//   a->grpc_uri()  // "127.0.0.1:0"
//
// Errors: INVALID_ARGUMENT naming the flag's value and the accepted forms;
// PERMISSION_DENIED for a non-loopback host without allow_remote.
#ifndef SERVELAB_DAEMON_SERVICE_LISTEN_ADDRESS_H_
#define SERVELAB_DAEMON_SERVICE_LISTEN_ADDRESS_H_

#include <string>

#include "absl/status/statusor.h"

namespace servelab::service {

struct ListenAddress {
  enum class Kind { kUnix, kTcp };
  Kind kind = Kind::kUnix;
  std::string path;  // kUnix
  std::string host;  // kTcp, without brackets ("::1")
  int port = 0;      // kTcp; 0 picks a free port

  // The form gRPC's AddListeningPort takes ("unix:/p", "127.0.0.1:0", "[::1]:0").
  std::string grpc_uri() const;
  // "HOST:PORT" with IPv6 bracketed, as civetweb and gRPC take it.
  std::string host_port() const;
  // The form --listen and the CLI's --addr take ("unix:/p", "tcp:127.0.0.1:5").
  std::string ToString() const;
};

// "unix:PATH" or "tcp:HOST:PORT" (IPv6 as "tcp:[::1]:PORT").
absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& text, bool allow_remote);
// "HOST:PORT", always TCP (for --metrics-listen).
absl::StatusOr<ListenAddress> ParseHostPort(const std::string& text, bool allow_remote);

// 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(const std::string& host);

}  // namespace servelab::service

#endif  // SERVELAB_DAEMON_SERVICE_LISTEN_ADDRESS_H_
