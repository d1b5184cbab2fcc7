// Parses a spec file's text — YAML, or JSON (a subset of YAML) — with the
// proto field names, onto an ExperimentSpec.
//
//   absl::StatusOr<v1::ExperimentSpec> spec = ParseSpecText(text, "base.yaml");
//
// Errors are INVALID_ARGUMENT: malformed text names the source and line;
// an unknown field names its path and the nearest valid one; a wrong type
// names the path and the expected type.
#ifndef SERVELAB_DAEMON_CORE_SPEC_SPEC_TEXT_H_
#define SERVELAB_DAEMON_CORE_SPEC_SPEC_TEXT_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::core::spec {

absl::StatusOr<v1::ExperimentSpec> ParseSpecText(absl::string_view text,
                                                 absl::string_view source_name);

}  // namespace servelab::core::spec

#endif  // SERVELAB_DAEMON_CORE_SPEC_SPEC_TEXT_H_
