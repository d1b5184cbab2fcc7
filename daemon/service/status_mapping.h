// The one place where absl::Status meets the wire. Every handler of
// ServeLabService finishes with ToGrpcStatus(); nothing else converts.
//
//   reactor->Finish(ToGrpcStatus(control_plane.Cancel(id).status()));
//
// The codes are numerically identical in both libraries, so the mapping is
// total and lossless; the message travels unchanged (it names the field path
// or the id at fault).
#ifndef SERVELAB_DAEMON_SERVICE_STATUS_MAPPING_H_
#define SERVELAB_DAEMON_SERVICE_STATUS_MAPPING_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace servelab::service {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace servelab::service

#endif  // SERVELAB_DAEMON_SERVICE_STATUS_MAPPING_H_
