// Typed assignment of text and YAML nodes to protobuf fields, by reflection.
// Internal to the spec library: the spec-file parser and `--set` share it, so
// a value means the same thing in a file and on the command line.
//
// Value rules: integers and doubles as numbers; bools as true/false/yes/no;
// enums by name, case-insensitive, with or without the enum's prefix
// (`sim` = `ENGINE_SIM`); durations as `90s`, `30m`, `1h30m`; a FileRef as a
// plain path string or {path, sha256}; lists as YAML sequences; maps as YAML
// mappings of strings. Errors are INVALID_ARGUMENT naming `path` and the
// expected type.
#ifndef SERVELAB_DAEMON_CORE_SPEC_PROTO_YAML_H_
#define SERVELAB_DAEMON_CORE_SPEC_PROTO_YAML_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "yaml-cpp/yaml.h"

namespace servelab::core::spec {

// Element position for AssignText on repeated fields.
inline constexpr int kSingular = -1;
inline constexpr int kAppend = -2;

// Sets one value from text: a singular field (index kSingular), an existing
// element (index >= 0) or a new last element (kAppend).
absl::Status AssignText(google::protobuf::Message& message,
                        const google::protobuf::FieldDescriptor& field, int index,
                        absl::string_view text, const std::string& path);

// Replaces the whole value of `field` (a list or map replaced, not merged)
// with what `node` holds. A null node leaves the field unset.
absl::Status AssignNode(google::protobuf::Message& message,
                        const google::protobuf::FieldDescriptor& field, const YAML::Node& node,
                        const std::string& path);

// Assigns every key of mapping `node` to the field of that name.
absl::Status AssignMapping(google::protobuf::Message& message, const YAML::Node& node,
                           const std::string& path);

// "an integer", "a duration (e.g. 90s, 30m)", "one of: sim, vllm, ..." — for errors.
std::string ExpectedType(const google::protobuf::FieldDescriptor& field);

}  // namespace servelab::core::spec

#endif  // SERVELAB_DAEMON_CORE_SPEC_PROTO_YAML_H_
