// The `servelab` command line: parses arguments, talks to servelabd over
// gRPC and prints the result. main() only calls RunCli.
//
//   return servelab::client::RunCli(argc, argv, std::cout, std::cerr);
//
// The CLI does no spec validation of its own: it sends the file's text and
// the daemon parses, validates and names the field at fault. Errors are
// printed to `err` as `error: <GRPC_CODE>: <message>`; the return value is
// an exit code from exit_codes.h. Environment: SERVELAB_ADDR, SERVELAB_TLS_CA,
// SERVELAB_STATE_DIR. Not thread-safe (reads the environment and the cwd).
#ifndef SERVELAB_CLIENT_COMMANDS_H_
#define SERVELAB_CLIENT_COMMANDS_H_

#include <ostream>
#include <string>

namespace servelab::client {

int RunCli(int argc, char** argv, std::ostream& out, std::ostream& err);

// The address used when --addr is not given: $SERVELAB_ADDR, else
// unix:$SERVELAB_STATE_DIR/servelab.sock, else unix:./.state/servelab.sock.
std::string DefaultAddress();
// --addr form ("unix:PATH", "tcp:HOST:PORT", or a plain gRPC target) to the
// target gRPC's CreateChannel takes.
std::string GrpcTarget(const std::string& address);

}  // namespace servelab::client

#endif  // SERVELAB_CLIENT_COMMANDS_H_
