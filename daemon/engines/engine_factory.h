// Builds the core::InstanceDriver for a deployment's `engine` kind. The daemon
// constructs one engine per kind it meets, from its flags:
//
//   EngineOptions options;
//   options.sim.binary = absl::GetFlag(FLAGS_sim_binary);  // default: DefaultSimBinary()
//   options.sim.time_scale = absl::GetFlag(FLAGS_sim_time_scale);
//   absl::StatusOr<std::unique_ptr<core::InstanceDriver>> engine =
//       MakeEngine(spec.deployment().engine(), options);
//
// One engine per kind rather than one object dispatching per spec because
// Launch/WaitReady/Stop/Scrape see only a ServingInstance, which does not
// say which engine launched it: the caller keeps the kind with the hot
// deployment (its frozen spec's deployment.engine) and, after a daemon
// restart, makes the engine of the re-adopted deployment's spec.
#ifndef SERVELAB_DAEMON_ENGINES_ENGINE_FACTORY_H_
#define SERVELAB_DAEMON_ENGINES_ENGINE_FACTORY_H_

#include <memory>

#include "absl/status/statusor.h"
#include "daemon/core/instance_driver.h"
#include "daemon/engines/sglang_renderer.h"
#include "daemon/engines/sim_engine.h"
#include "daemon/engines/vllm_renderer.h"
#include "daemon/placement/placement_set.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::engines {

struct EngineOptions {
  SimEngineOptions sim{DefaultSimBinary(), 1.0};
  VllmOptions vllm;
  SglangOptions sglang;
  // Shared by every engine (not owned); null: each engine places locally.
  placement::PlacementSet* placements = nullptr;
};

// INVALID_ARGUMENT for ENGINE_UNSPECIFIED or an unknown kind, and for
// options the engine rejects (a relative sim binary path).
absl::StatusOr<std::unique_ptr<core::InstanceDriver>> MakeEngine(v1::Engine kind,
                                                                 const EngineOptions& options);

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_ENGINE_FACTORY_H_
