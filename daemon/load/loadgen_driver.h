// LoadgenDriver: the daemon's core::LoadDriver over loadgen/ — prompts from
// the spec's dataset, arrivals from its workload, sent by the async HTTP
// runner. Warmup, cache seed, route check and formal load all go through it.
// Thread-safe (each Run uses its own runner).
#ifndef SERVELAB_DAEMON_LOAD_LOADGEN_DRIVER_H_
#define SERVELAB_DAEMON_LOAD_LOADGEN_DRIVER_H_

#include <memory>

#include "daemon/core/load_driver.h"

namespace servelab::load {

class LoadgenDriver : public core::LoadDriver {
 public:
  // Every load's sending thread runs SCHED_FIFO at `realtime_priority` (0:
  // ordinary scheduling; loadgen/realtime.h). Refused here, at the daemon's
  // start, when the priority is out of range or not permitted.
  static absl::StatusOr<std::unique_ptr<LoadgenDriver>> Create(int realtime_priority);

  absl::StatusOr<core::LoadPlanSummary> Plan(const core::LoadJob& job) override;
  absl::StatusOr<core::LoadOutcome> Run(
      const core::LoadJob& job,
      const std::function<absl::Status(const std::vector<v1::RequestRecord>&)>& on_records,
      const std::function<void(const core::LoadTick&)>& on_tick,
      std::atomic<bool>& cancel) override;

 private:
  explicit LoadgenDriver(int realtime_priority) : realtime_priority_(realtime_priority) {}
  const int realtime_priority_;
};

}  // namespace servelab::load

#endif  // SERVELAB_DAEMON_LOAD_LOADGEN_DRIVER_H_
