// Checks a spec (after defaults) for values no experiment can run with.
// Returns INVALID_ARGUMENT listing every problem, each as "PATH: reason",
// or OK.
#ifndef SERVELAB_DAEMON_CORE_SPEC_VALIDATE_H_
#define SERVELAB_DAEMON_CORE_SPEC_VALIDATE_H_

#include "absl/status/status.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::core::spec {

absl::Status ValidateSpec(const v1::ExperimentSpec& spec);

}  // namespace servelab::core::spec

#endif  // SERVELAB_DAEMON_CORE_SPEC_VALIDATE_H_
