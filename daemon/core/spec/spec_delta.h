// Applies a delta to a spec, field by field, typed by reflection:
//
//   ApplySet(spec, "workload.concurrency=96");
//   ApplySet(spec, "limits.formal_deadline=30m");
//   ApplySet(spec, "deployment.decode.extra_args[2]=--x");   // replace element 2
//   ApplySet(spec, "deployment.decode.extra_args+=--y");     // append
//   ApplySet(spec, "deployment.decode.devices=[8, 9]");      // replace the list
//   ApplySet(spec, "labels.owner=me");                       // one map key
//   ApplyUnset(spec, "workload.request_rate");               // back to default
//
// Values follow proto_yaml.h. Errors: INVALID_ARGUMENT naming the path (with
// the nearest valid field for a typo) or the expected type. On error the spec
// is unchanged.
#ifndef SERVELAB_DAEMON_CORE_SPEC_SPEC_DELTA_H_
#define SERVELAB_DAEMON_CORE_SPEC_SPEC_DELTA_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace servelab::core::spec {

absl::Status ApplySet(google::protobuf::Message& spec, absl::string_view assignment);
absl::Status ApplyUnset(google::protobuf::Message& spec, absl::string_view path);

}  // namespace servelab::core::spec

#endif  // SERVELAB_DAEMON_CORE_SPEC_SPEC_DELTA_H_
