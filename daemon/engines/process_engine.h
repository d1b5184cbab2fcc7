// The part of every engine that is the same for sim, vLLM, SGLang and
// command: serving instances are processes started through a Placement
// (this machine, or Slurm job steps: daemon/placement/placement_set.h) that
// speak HTTP (http_client.h) on the address the placement reports. What differs between engines is
// how argv is rendered (each subclass's Render) and a few protocol details — health path,
// cache-reset path, metric names — held in a ServingProtocol.
//
//   class SimEngine : public ProcessEngine {
//    public:
//     SimEngine() : ProcessEngine(VllmProtocol()) {}
//     absl::StatusOr<core::LaunchCommand> Render(...) override;
//   };
//
// Thread-safe: the protocol is constant after construction and every call
// works on its arguments only.
#ifndef SERVELAB_DAEMON_ENGINES_PROCESS_ENGINE_H_
#define SERVELAB_DAEMON_ENGINES_PROCESS_ENGINE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/core/instance_driver.h"
#include "daemon/engines/prometheus_text.h"
#include "daemon/placement/placement_set.h"

namespace servelab::engines {

// Metric names that fill core::InstanceCounters; each is summed over its
// label sets. An empty name leaves that counter at 0.
struct CounterNames {
  std::string requests_running;
  std::string requests_waiting;
  std::string request_success;
  std::string prompt_tokens;
  std::string generation_tokens;
  std::string prefix_cache_queries;
  std::string prefix_cache_hits;
  // Summed: the names differ between releases, and only one exists at a time.
  std::vector<std::string> kv_cache_usage;
  std::vector<std::string> requests_in_transfer;
};

struct ServingProtocol {
  std::string health_path = "/health";
  // Routers differ (vLLM's example proxy answers /healthcheck); the first of
  // these that answers 200 means ready.
  std::vector<std::string> router_health_paths = {"/health"};
  std::string metrics_path = "/metrics";
  // POST; empty when the engine has no such endpoint.
  std::string reset_prefix_cache_path = "/reset_prefix_cache";
  // The reset's 200 proves nothing (vLLM), so it is confirmed by a cache-check request.
  bool reset_needs_confirmation = true;
  CounterNames counters;
  // Per HTTP exchange (a /metrics scrape of a busy instance can be slow).
  absl::Duration request_timeout = absl::Seconds(5);
};

// vLLM's (and servelab-sim's) metric names and endpoints; vllm-ascend's too.
ServingProtocol VllmProtocol();
// SGLang's: /flush_cache, sglang:* metrics (needs --enable-metrics).
ServingProtocol SglangProtocol();

core::InstanceCounters CountersFromSamples(const MetricSamples& samples, const CounterNames& names);

// Stops the processes of `placements`' owner that no instance of
// `recorded` is (started, then the daemon died before storing them).
std::vector<int> StopUnrecordedInstances(placement::PlacementSet& placements,
                                         const std::vector<v1::ServingInstance>& recorded,
                                         absl::Duration grace);

// Ends the allocations of `placements` that no process of `kept` runs in;
// returns them as "Slurm job 42".
absl::StatusOr<std::vector<std::string>> ReleaseUnusedAllocations(
    placement::PlacementSet& placements, const std::vector<v1::ServingInstance>& kept);

class ProcessEngine : public core::InstanceDriver {
 public:
  explicit ProcessEngine(ServingProtocol protocol) : protocol_(std::move(protocol)) {}

  // The placements to launch through and find instances with; the daemon's
  // shared set. Until set: a local-only set of this engine's own.
  void UsePlacements(placement::PlacementSet* placements) { placements_ = placements; }

  // Writes command.files, then starts argv (and every extra rank) through
  // the command's placement. Errors as Placement::Spawn
  // (FAILED_PRECONDITION for a binary that cannot run); ranks already
  // started are stopped again on error.
  absl::StatusOr<v1::ServingInstance> Launch(const core::LaunchCommand& command) override;
  // Polls the health endpoint until 200. FAILED_PRECONDITION with the last
  // lines of the log when the process exits first; DEADLINE_EXCEEDED with
  // the last probe error otherwise.
  absl::Status WaitReady(const v1::ServingInstance& instance, absl::Time deadline) override;
  absl::StatusOr<bool> Alive(const v1::ServingInstance& instance) override;
  absl::Status Stop(const v1::ServingInstance& instance, absl::Duration grace) override;
  // UNAVAILABLE when /metrics does not answer 200; INVALID_ARGUMENT when it
  // is not Prometheus text.
  absl::StatusOr<core::InstanceCounters> Scrape(const v1::ServingInstance& instance) override;
  // FAILED_PRECONDITION when the protocol has no reset endpoint or the
  // instance answers 404 (vLLM without VLLM_SERVER_DEV_MODE=1); UNAVAILABLE
  // for any other answer but 200 (SGLang's 400 while busy): retry.
  absl::Status ResetPrefixCache(const v1::ServingInstance& instance) override;
  bool ResetNeedsConfirmation(const v1::ServingInstance& instance) override {
    return protocol_.reset_needs_confirmation;
  }
  absl::Status SendCacheCheckRequest(const v1::ServingInstance& instance,
                                     const std::string& prompt) override;
  std::string BaseUrl(const v1::ServingInstance& instance) override;

  absl::StatusOr<std::vector<std::string>> ReleaseUnusedPlacements(
      const std::vector<v1::ServingInstance>& kept) override;

  const ServingProtocol& protocol() const { return protocol_; }

 private:
  placement::PlacementSet& placements();
  // Starts one process of the command (rank 0 or an extra rank).
  absl::StatusOr<v1::RankProcess> Spawn(const core::LaunchCommand& command,
                                        const std::vector<std::string>& argv,
                                        const std::map<std::string, std::string>& env,
                                        const std::string& log_path, const std::string& name);

  const ServingProtocol protocol_;
  placement::PlacementSet* placements_ = nullptr;
};

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_PROCESS_ENGINE_H_
