#include "daemon/core/spec/freeze.h"

#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/core/spec/canonical.h"
#include "daemon/core/spec/defaults.h"
#include "daemon/core/spec/validate.h"

namespace servelab::core::spec {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

constexpr char kFileRef[] = "servelab.v1.FileRef";

// Calls `fn(file_ref, path)` for every FileRef set anywhere in `message`.
template <typename Fn>
absl::Status ForEachFileRef(Message& message, const std::string& prefix, Fn&& fn) {
  const auto& r = *message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r.ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || field->is_repeated()) continue;
    std::string path = prefix.empty() ? field->name() : absl::StrCat(prefix, ".", field->name());
    Message& child = *r.MutableMessage(&message, field);
    if (field->message_type()->full_name() == kFileRef) {
      SERVELAB_RETURN_IF_ERROR(fn(static_cast<v1::FileRef&>(child), path));
    } else {
      SERVELAB_RETURN_IF_ERROR(ForEachFileRef(child, path, fn));
    }
  }
  return absl::OkStatus();
}

absl::Status ResolveFile(v1::FileRef& file, const std::string& path, const std::string& base_dir) {
  if (file.path().empty()) {
    if (file.sha256().empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(path, ".path: required when sha256 is given"));
  }
  std::filesystem::path resolved(file.path());
  if (resolved.is_relative()) {
    if (base_dir.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".path: relative path \"", file.path(),
                       "\" needs a base directory to resolve against"));
    }
    resolved = std::filesystem::path(base_dir) / resolved;
  }
  resolved = resolved.lexically_normal();
  absl::StatusOr<std::string> sha = Sha256File(resolved.string());
  if (!sha.ok()) {
    return absl::Status(sha.status().code(), absl::StrCat(path, ".path: ", sha.status().message()));
  }
  if (!file.sha256().empty() && file.sha256() != *sha) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".sha256: file \"", resolved.string(),
                                                   "\" has sha256 ", *sha, ", the spec says ",
                                                   file.sha256()));
  }
  file.set_path(resolved.string());
  file.set_sha256(*sha);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FrozenSpec> Freeze(const v1::ExperimentSpec& spec, const std::string& base_dir) {
  FrozenSpec frozen;
  frozen.spec = spec;
  ApplyDefaults(frozen.spec);
  SERVELAB_RETURN_IF_ERROR(ValidateSpec(frozen.spec));
  SERVELAB_RETURN_IF_ERROR(
      ForEachFileRef(frozen.spec, "", [&](v1::FileRef& file, const std::string& path) {
        return ResolveFile(file, path, base_dir);
      }));
  frozen.canonical_json = CanonicalJson(frozen.spec);
  frozen.sha256 = Sha256Hex(frozen.canonical_json);
  return frozen;
}

void ClearFileHashes(v1::ExperimentSpec& spec) {
  ForEachFileRef(spec, "", [](v1::FileRef& file, const std::string&) {
    file.clear_sha256();
    return absl::OkStatus();
  }).IgnoreError();
}

}  // namespace servelab::core::spec
