// Canonical JSON of a message and SHA-256, the identity of a frozen spec.
//
// Canonical form: fields in field-number order with their proto names, fields
// at their default value omitted, map keys sorted, doubles in shortest
// round-trip form, enums by name, durations as "<seconds>s", no whitespace.
// Two specs that mean the same thing — whatever order their file listed the
// fields in — have the same canonical JSON and so the same hash.
#ifndef SERVELAB_DAEMON_CORE_SPEC_CANONICAL_H_
#define SERVELAB_DAEMON_CORE_SPEC_CANONICAL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace servelab::core::spec {

std::string CanonicalJson(const google::protobuf::Message& message);

// Canonical JSON of one field's value ("" when unset), e.g. "96", "[\"a\"]".
std::string CanonicalFieldJson(const google::protobuf::Message& message,
                               const google::protobuf::FieldDescriptor& field);

// Lowercase hex.
std::string Sha256Hex(absl::string_view data);

// SHA-256 of a file's bytes; NOT_FOUND / PERMISSION_DENIED naming the file.
absl::StatusOr<std::string> Sha256File(const std::string& path);

}  // namespace servelab::core::spec

#endif  // SERVELAB_DAEMON_CORE_SPEC_CANONICAL_H_
