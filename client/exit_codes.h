// Exit codes of `servelab`: one per gRPC code a script may want to act on.
//
//   0  OK
//   1  any other error (INTERNAL, UNKNOWN, ALREADY_EXISTS, ...)
//   2  usage: bad flags or arguments, a spec file that cannot be read
//   3  INVALID_ARGUMENT: the daemon refused the spec or delta (field path in the message)
//   4  NOT_FOUND: unknown experiment id (or base id)
//   5  FAILED_PRECONDITION: the experiment's state forbids the call
//   6  UNAVAILABLE: servelabd is not running at the address, or is shutting down
//   7  DEADLINE_EXCEEDED: the call, or `wait --timeout`, ran out of time
//   8  `wait`: the experiment ended without reaching the awaited point
//      (e.g. FAILED or CANCELLED while waiting for `done`, or final with no
//      formal request sent while waiting for `sent`)
#ifndef SERVELAB_CLIENT_EXIT_CODES_H_
#define SERVELAB_CLIENT_EXIT_CODES_H_

#include <grpcpp/support/status_code_enum.h>

namespace servelab::client {

enum ExitCode : int {
  kExitOk = 0,
  kExitOther = 1,
  kExitUsage = 2,
  kExitInvalidArgument = 3,
  kExitNotFound = 4,
  kExitFailedPrecondition = 5,
  kExitUnavailable = 6,
  kExitDeadlineExceeded = 7,
  kExitNotReached = 8,
};

// The table above, for --help.
inline constexpr char kExitCodeTable[] =
    "Exit codes:\n"
    "  0 ok    1 other error    2 usage (bad arguments, unreadable file)\n"
    "  3 INVALID_ARGUMENT    4 NOT_FOUND    5 FAILED_PRECONDITION\n"
    "  6 UNAVAILABLE (daemon not running)    7 DEADLINE_EXCEEDED / wait timeout\n"
    "  8 wait: experiment ended without reaching the awaited point\n";

ExitCode ExitCodeFor(grpc::StatusCode code);
// "INVALID_ARGUMENT", "NOT_FOUND", ...
const char* StatusCodeName(grpc::StatusCode code);

}  // namespace servelab::client

#endif  // SERVELAB_CLIENT_EXIT_CODES_H_
