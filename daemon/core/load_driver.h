// LoadDriver: runs one load phase (warmup, cache seed, route check or formal)
// against a serving endpoint and streams its raw records to a callback. The
// daemon's implementation wraps loadgen/ (datasets, schedules, the async
// HTTP client); core tests use a fake. Everything a load does is derived
// from the frozen spec passed in — the driver keeps no parameter of its own.
#ifndef SERVELAB_DAEMON_CORE_LOAD_DRIVER_H_
#define SERVELAB_DAEMON_CORE_LOAD_DRIVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "servelab/v1/result.pb.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::core {

struct LoadJob {
  const v1::ExperimentSpec* spec = nullptr;  // Frozen; outlives the run.
  v1::Phase phase = v1::PHASE_FORMAL;
  std::string experiment_id;
  int attempt = 1;
  std::string url;       // Where requests go (the router).
  std::string load_tag;  // Sent as x-servelab-load (overlap witness).
  // Warmup only: which round (each round is warmup.requests requests).
  int warmup_round = 0;
  // The load is cancelled at this time (formal: submit + formal_deadline).
  absl::Time deadline = absl::InfiniteFuture();
};

struct LoadOutcome {
  int64_t planned = 0;
  int64_t sent = 0;
  int64_t completed = 0;
  int64_t failed = 0;
  int64_t not_sent = 0;
  absl::Duration wall;
  // Sum over requests of (end - sent): what the requests cost, beside `wall`.
  absl::Duration summed_latency;
  // True when every request ended (completed, failed or cancelled) before Run
  // returned: the client side of drain is confirmed.
  bool all_ended = false;
  // How long first tokens waited in the client's sockets (p99), which the
  // records' TTFT leaves out (loadgen/load_runner.h). A large value means
  // the daemon's own core was the load's bottleneck.
  absl::Duration first_token_read_lag_p99;
};

// Live figures while a load runs.
struct LoadTick {
  int64_t sent = 0;
  int64_t completed = 0;
  int64_t failed = 0;
};

// What a job would send, computed by the same code that sends it.
struct LoadPlanSummary {
  int64_t requests = 0;
  // Planned send time of the last request (zero without a request rate).
  absl::Duration arrival_span;
  int64_t max_request_tokens = 0;  // Longest prompt + output.
};

class LoadDriver {
 public:
  virtual ~LoadDriver() = default;

  // Builds the job's prompts and schedule without sending anything
  // (preflight). INVALID_ARGUMENT naming the spec field at fault.
  virtual absl::StatusOr<LoadPlanSummary> Plan(const LoadJob& job) = 0;

  // Blocks until the load ends. `on_records` gets every batch (called from
  // one thread; an error cancels the load and is returned); `on_tick` gets
  // progress at least every 100 ms, from another thread, at the same time
  // as `on_records` may run. UNAVAILABLE with zero requests sent when
  // the endpoint does not answer its endpoint check.
  virtual absl::StatusOr<LoadOutcome> Run(
      const LoadJob& job,
      const std::function<absl::Status(const std::vector<v1::RequestRecord>&)>& on_records,
      const std::function<void(const LoadTick&)>& on_tick, std::atomic<bool>& cancel) = 0;
};

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_LOAD_DRIVER_H_
