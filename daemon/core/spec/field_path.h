// Dotted paths into a spec message, as written in deltas and error messages:
//   workload.concurrency            a singular field
//   deployment.decode.extra_args[2] one element of a repeated field
//   labels.owner                    one key of a map (the rest of the path is the key)
// Resolution walks the message descriptors, so any field of the proto is
// addressable with no table to maintain.
#ifndef SERVELAB_DAEMON_CORE_SPEC_FIELD_PATH_H_
#define SERVELAB_DAEMON_CORE_SPEC_FIELD_PATH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace servelab::core::spec {

struct PathStep {
  const google::protobuf::FieldDescriptor* field = nullptr;
  int index = -1;       // For repeated fields: the element, or -1 for the whole field.
  std::string map_key;  // For map fields with has_key.
  bool has_key = false;
};

struct FieldPath {
  std::vector<PathStep> steps;
  std::string text;  // As written, for error messages.
};

// INVALID_ARGUMENT naming the path and the nearest valid field when a step
// does not exist.
absl::StatusOr<FieldPath> ResolvePath(const google::protobuf::Descriptor& root,
                                      absl::string_view path);

// Well-known types (Duration) are values, not messages to descend into.
bool IsValueMessage(const google::protobuf::Descriptor& descriptor);

// `unknown field "a.b" (did you mean "a.c"?)` or, with no close name, the
// list of valid fields at that level.
std::string UnknownFieldMessage(const google::protobuf::Descriptor& parent,
                                absl::string_view prefix, absl::string_view name);

// Fields of `descriptor` by name, comma separated, for help and errors.
std::string FieldNames(const google::protobuf::Descriptor& descriptor);

}  // namespace servelab::core::spec

#endif  // SERVELAB_DAEMON_CORE_SPEC_FIELD_PATH_H_
