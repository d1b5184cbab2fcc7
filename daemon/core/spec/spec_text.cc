#include "daemon/core/spec/spec_text.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/core/spec/proto_yaml.h"
#include "yaml-cpp/yaml.h"

namespace servelab::core::spec {

absl::StatusOr<v1::ExperimentSpec> ParseSpecText(absl::string_view text,
                                                 absl::string_view source_name) {
  std::string source = source_name.empty() ? "spec" : std::string(source_name);
  YAML::Node root;
  // yaml-cpp reports errors by exception; this is the one place that calls it
  // on whole documents.
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":", e.mark.line + 1, ":",
                                                   e.mark.column + 1, ": malformed YAML: ", e.msg));
  }
  if (!root.IsDefined() || root.IsNull()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": the spec is empty"));
  }
  v1::ExperimentSpec spec;
  absl::Status status = AssignMapping(spec, root, "");
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", status.message()));
  }
  return spec;
}

}  // namespace servelab::core::spec
