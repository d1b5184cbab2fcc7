// LoadgenDriver: the daemon's core::LoadDriver over loadgen/ — prompts from
// the spec's dataset, arrivals from its workload, sent by the async HTTP
// runner. Warmup, cache seed, route check and formal load all go through it.
// Thread-safe (each Run uses its own runner).
#ifndef SERVELAB_DAEMON_LOAD_LOADGEN_DRIVER_H_
#define SERVELAB_DAEMON_LOAD_LOADGEN_DRIVER_H_

#include "daemon/core/load_driver.h"

namespace servelab::load {

class LoadgenDriver : public core::LoadDriver {
 public:
  absl::StatusOr<core::LoadPlanSummary> Plan(const core::LoadJob& job) override;
  absl::StatusOr<core::LoadOutcome> Run(
      const core::LoadJob& job,
      const std::function<absl::Status(const std::vector<v1::RequestRecord>&)>& on_records,
      const std::function<void(const core::LoadTick&)>& on_tick,
      std::atomic<bool>& cancel) override;
};

}  // namespace servelab::load

#endif  // SERVELAB_DAEMON_LOAD_LOADGEN_DRIVER_H_
