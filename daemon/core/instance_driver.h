// InstanceDriver: turns a frozen deployment spec into running serving instances and
// knows their protocol (docs/design.md §9). Implementations live in daemon/engines/
// (sim, vllm, sglang, command); the stage runner only sees this interface.
//
// Rendering is separate from launching so that preflight shows and checks
// exactly the argv and environment that Launch will execute. No shell is
// involved anywhere: argv arrays only.
//
// Errors: INVALID_ARGUMENT for a spec the engine cannot render (naming the
// field); UNAVAILABLE when an instance does not answer; DEADLINE_EXCEEDED
// when it does not become ready in time. Implementations are thread-safe.
#ifndef SERVELAB_DAEMON_CORE_INSTANCE_DRIVER_H_
#define SERVELAB_DAEMON_CORE_INSTANCE_DRIVER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "servelab/v1/experiment.pb.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::core {

// One more process of a side: an external data-parallel rank (see
// InstanceSpec.external_data_parallel).
struct RankCommand {
  int dp_rank = 0;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  int port = 0;
  std::string log_path;
};

// The final command of one instance (of its rank 0 when it has several).
struct LaunchCommand {
  v1::Engine engine = v1::ENGINE_UNSPECIFIED;  // Which engine rendered it.
  v1::Side side = v1::SIDE_UNSPECIFIED;
  std::vector<std::string> argv;           // argv[0] is an absolute path.
  std::map<std::string, std::string> env;  // Added to a clean base environment.
  // Variables the processes take from servelabd's own environment, by name
  // (the spec's pass_env: secrets). Read at spawn, never stored or shown.
  std::vector<std::string> pass_env;
  int port = 0;          // Where it will listen (loopback).
  std::string log_path;  // stdout+stderr go here.
  // Files Launch writes (path -> content) before it starts argv, e.g. a
  // per-instance config file that argv names. Part of what preflight shows.
  std::map<std::string, std::string> files;
  // Ranks 1..N-1 when the side runs one process per DP rank; empty otherwise.
  std::vector<RankCommand> extra_ranks;
  // The model name requests to this instance use; empty: the server's default.
  std::string served_model;
  // Where it runs (docs/design.md §9): the spec's placement, the side's node
  // (empty: any) and its device count (the GRES count of an exclusive step).
  v1::PlacementSpec placement;
  std::string node;
  int devices = 0;
};

// Where the other sides listen, for rendering the router (P/D URLs).
struct Endpoints {
  int prefill_port = 0;
  int decode_port = 0;
  int router_port = 0;
  // Their addresses: another node's under Slurm placement.
  std::string prefill_host = "127.0.0.1";
  std::string decode_host = "127.0.0.1";
  // Ports of ranks 1..N-1 of a side with external data parallel.
  std::vector<int> prefill_extra_ports;
  std::vector<int> decode_extra_ports;
};

// Counters scraped from an instance's /metrics (vLLM names).
struct InstanceCounters {
  double requests_running = 0;      // vllm:num_requests_running
  double requests_waiting = 0;      // vllm:num_requests_waiting
  double request_success = 0;       // vllm:request_success_total (all reasons)
  double prompt_tokens = 0;         // vllm:prompt_tokens_total
  double generation_tokens = 0;     // vllm:generation_tokens_total
  double prefix_cache_queries = 0;  // vllm:prefix_cache_queries_total
  double prefix_cache_hits = 0;     // vllm:prefix_cache_hits_total
  // Fraction of KV blocks in use (vllm:kv_cache_usage_perc); blocks held for
  // a KV transfer count, which is why a cache reset waits for 0.
  double kv_cache_usage = 0;
  // Requests between the P/D queues (SGLang's prealloc / inflight /
  // transfer queue gauges): neither running nor waiting, yet not ended.
  double requests_in_transfer = 0;

  // Some request has not ended here: the one definition drain and the cache
  // reset's idle wait share, so a new queue gauge is counted by both.
  bool HoldsRequests() const {
    return requests_running > 0 || requests_waiting > 0 || requests_in_transfer > 0;
  }
};

class InstanceDriver {
 public:
  virtual ~InstanceDriver() = default;

  // The command for `side` of `spec`, listening on the port in `endpoints`.
  virtual absl::StatusOr<LaunchCommand> Render(const v1::ExperimentSpec& spec, v1::Side side,
                                               const Endpoints& endpoints,
                                               const std::string& log_dir) = 0;

  // Starts the process in its own session (it survives a daemon restart).
  // The returned instance carries pid, process start time, port and log path;
  // the caller fills fingerprint and experiment_id.
  virtual absl::StatusOr<v1::ServingInstance> Launch(const LaunchCommand& command) = 0;

  // Waits until the instance answers its health probe, the process exits
  // (FAILED_PRECONDITION with the log's tail) or `deadline` passes.
  virtual absl::Status WaitReady(const v1::ServingInstance& instance, absl::Time deadline) = 0;

  // The same process (pid and start time, or Slurm step) still runs, every
  // rank of it. UNAVAILABLE when it cannot tell (the Slurm controller does
  // not answer): the caller keeps the instance rather than forget it.
  virtual absl::StatusOr<bool> Alive(const v1::ServingInstance& instance) = 0;

  // SIGTERM, then SIGKILL after `grace`, to the instance's process group.
  virtual absl::Status Stop(const v1::ServingInstance& instance, absl::Duration grace) = 0;

  // Counters summed over every process (rank) of the instance.
  virtual absl::StatusOr<InstanceCounters> Scrape(const v1::ServingInstance& instance) = 0;
  // One reset request to every rank. UNAVAILABLE when the engine refused it
  // for now (SGLang's /flush_cache answers 400 while requests run): retry.
  // FAILED_PRECONDITION when it cannot work at all (no such route).
  virtual absl::Status ResetPrefixCache(const v1::ServingInstance& instance) = 0;
  // True when a reset that answered OK may still have done nothing (vLLM
  // answers 200 even when it refused because blocks were in use), so the
  // caller must confirm it with a cache-check request (docs/design.md §9).
  virtual bool ResetNeedsConfirmation(const v1::ServingInstance& instance) = 0;
  // Sends `prompt` as one short non-streaming completion straight to every
  // rank of the instance (not through the router), so that the prefix-cache
  // counters show whether the prompt was still cached.
  virtual absl::Status SendCacheCheckRequest(const v1::ServingInstance& instance,
                                             const std::string& prompt) = 0;

  // "http://HOST:PORT": where requests for this instance go.
  virtual std::string BaseUrl(const v1::ServingInstance& instance) = 0;

  // Stops what this daemon started but never recorded (it died in between):
  // every process marked as its own that is none of `recorded`. Returns
  // their pids.
  virtual std::vector<int> StopUnrecorded(const std::vector<v1::ServingInstance>& recorded,
                                          absl::Duration grace) {
    return {};
  }

  // Ends every allocation the daemon created (Slurm) that none of `kept`
  // runs in; returns what it ended, e.g. {"slurm job 42"}.
  virtual absl::StatusOr<std::vector<std::string>> ReleaseUnusedPlacements(
      const std::vector<v1::ServingInstance>& kept) {
    return std::vector<std::string>();
  }
};

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_INSTANCE_DRIVER_H_
