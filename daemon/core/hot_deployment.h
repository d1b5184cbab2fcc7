// What the accelerators hold right now, read from the stored serving
// instances: the input of every plan.
#ifndef SERVELAB_DAEMON_CORE_HOT_DEPLOYMENT_H_
#define SERVELAB_DAEMON_CORE_HOT_DEPLOYMENT_H_

#include <optional>

#include "absl/status/statusor.h"
#include "daemon/core/planner.h"
#include "daemon/core/store.h"
#include "servelab/v1/service.pb.h"

namespace servelab::core {

// The fingerprint of `side` (the router's for any other value).
const std::string& FingerprintOf(const v1::Fingerprints& fingerprints, v1::Side side);

// nullopt when no instance runs. The warmup fingerprint is the one of the
// experiment that launched the instances (the last one to warm them).
absl::StatusOr<std::optional<HotDeployment>> ReadHotDeployment(Store& store);

// The API's view of what runs (all but cache_state, which needs the
// history): empty when nothing runs.
absl::StatusOr<v1::HotDeployment> DescribeHotDeployment(Store& store);

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_HOT_DEPLOYMENT_H_
