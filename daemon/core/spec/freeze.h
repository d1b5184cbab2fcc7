// Freezing: the one step that turns a submitted spec into the immutable spec
// an experiment runs — defaults applied, every referenced file resolved to an
// absolute path and hashed into the spec, values validated, canonical JSON
// and its SHA-256 computed.
//
//   absl::StatusOr<FrozenSpec> frozen = Freeze(spec, "/home/me/experiments");
//
// Errors: INVALID_ARGUMENT with "PATH: reason" for bad values (every problem
// listed) or a file whose content no longer matches a given sha256;
// NOT_FOUND naming the field path when a referenced file does not exist.
#ifndef SERVELAB_DAEMON_CORE_SPEC_FREEZE_H_
#define SERVELAB_DAEMON_CORE_SPEC_FREEZE_H_

#include <string>

#include "absl/status/statusor.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::core::spec {

struct FrozenSpec {
  v1::ExperimentSpec spec;
  std::string canonical_json;
  std::string sha256;
};

// `base_dir` resolves relative file paths (the spec file's directory, or the
// client's working directory for a delta).
absl::StatusOr<FrozenSpec> Freeze(const v1::ExperimentSpec& spec, const std::string& base_dir);

// Drops the file hashes of a spec so the next Freeze hashes the files as they
// are now. A delta starts from its base this way: a file that changed since
// the base was frozen shows up as a change, instead of failing the delta.
void ClearFileHashes(v1::ExperimentSpec& spec);

}  // namespace servelab::core::spec

#endif  // SERVELAB_DAEMON_CORE_SPEC_FREEZE_H_
