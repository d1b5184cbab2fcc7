// The sim's model parameters, read from an optional YAML file (--config).
//
// Every duration is in modelled seconds and is multiplied by --time-scale
// before the sim waits on it. Defaults describe a mid-sized model on one
// accelerator; sim/README.md lists them. An unknown key in the file is an
// error naming the key, so a typo never silently falls back to a default.
//
//   absl::StatusOr<SimConfig> c = LoadSimConfig("sim.yaml");
#ifndef SERVELAB_SIM_CONFIG_H_
#define SERVELAB_SIM_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "sim/json.h"

namespace servelab::sim {

enum class Role { kUnified, kPrefill, kDecode, kRouter };

absl::StatusOr<Role> ParseRole(const std::string& name);
const char* RoleName(Role role);

// Faults to inject. Zero / false means "off". Set from the config file's
// `faults:` block at start and merged at run time by POST /admin/faults.
struct FaultConfig {
  // Exit the process (with exit_code) once this many generation requests
  // have finished. 0 = never.
  int64_t exit_after_requests = 0;
  int exit_code = 70;
  // Hang: the request is admitted (counts as running) and never answers.
  int64_t hang_next = 0;     // the next N generation requests
  double hang_fraction = 0;  // or each request with this probability
  // Error: answer error_status with an OpenAI-style error body.
  int64_t error_next = 0;
  double error_fraction = 0;
  int error_status = 503;
  // Drop: close the connection after drop_after_tokens chunks, no [DONE].
  int64_t drop_next = 0;
  double drop_fraction = 0;
  int64_t drop_after_tokens = 1;
  // Slow start: extra (modelled) seconds of loading. In the file it extends the
  // start-up load time; at run time it puts the instance back into loading
  // (/health 503, generation 503) for that long.
  double slow_start_seconds = 0;
  // Close the listening socket for this many (modelled) seconds, so new
  // connections are refused; existing keep-alive connections still work.
  double refuse_connections_seconds = 0;
};

struct SimConfig {
  std::string model = "servelab-sim";
  // Start-up: /health answers 503 for load_time_seconds.
  double load_time_seconds = 2.0;
  // The first cold_start_requests requests after loading each pay
  // cold_start_penalty_seconds extra prefill time (what warmup removes).
  int64_t cold_start_requests = 4;
  double cold_start_penalty_seconds = 0.5;
  // Capacity.
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 8192;
  int64_t max_model_len = 163840;
  // KV cache / prefix cache.
  int64_t block_size = 16;
  int64_t num_gpu_blocks = 65536;
  bool enable_prefix_caching = true;
  // Prefill: overhead + chunks * chunk_overhead + uncached_tokens * per_token *
  //          (1 + batch_slowdown * other_requests_in_prefill).
  double prefill_overhead_seconds = 0.010;
  double prefill_chunk_overhead_seconds = 0.002;
  double prefill_seconds_per_token = 0.00002;
  double prefill_batch_slowdown = 0.5;
  // Decode step (inter-token time) = base + per_seq * running sequences.
  double decode_base_seconds = 0.015;
  double decode_seconds_per_seq = 0.0001;
  // P/D: on the decode side, a transferred prompt costs
  // overhead + per_token * tokens not already in D's prefix cache.
  double kv_transfer_overhead_seconds = 0.002;
  double kv_transfer_seconds_per_token = 0.000002;
  // P/D: on the prefill side, a request served with
  // kv_transfer_params.do_remote_decode keeps its KV blocks in use this long
  // after its answer, while the decode side pulls them (NIXL's lease; SGLang's
  // prefill inflight queue). Unset = the --compat profile's default
  // (DefaultKvLeaseSeconds: 0 for sim, 0.2 otherwise).
  std::optional<double> kv_lease_seconds;
  // Per-request multiplicative jitter on prefill and KV transfer times:
  // factor drawn uniformly from [1 - jitter, 1 + jitter] at arrival with the
  // seeded generator. Decode steps are shared by the batch, so not jittered.
  double jitter = 0;
  // Without ignore_eos, each token after min_tokens ends the sequence with
  // this probability (finish_reason "stop"). 0 = always run to max_tokens.
  double eos_probability = 0;
  // Non-modelled limits.
  int64_t max_body_bytes = 64 << 20;
  int64_t debug_request_history = 4096;

  FaultConfig faults;
};

// Reads a YAML file (JSON also parses) over the defaults above.
absl::StatusOr<SimConfig> LoadSimConfig(const std::string& path);
// Parses YAML text over the defaults; `where` names the source in errors.
absl::StatusOr<SimConfig> ParseSimConfig(const std::string& text, const std::string& where);
// Checks ranges (positive capacities, fractions in [0, 1], ...).
absl::Status ValidateSimConfig(const SimConfig& config);

// Merges the members of a POST /admin/faults JSON object into `faults`.
// Unknown members and wrong types are InvalidArgument; `faults` is unchanged
// on error. {"clear": true} resets everything before merging the rest.
absl::Status MergeFaults(const JsonValue& body, FaultConfig& faults);
// The current faults as a JSON object (GET /admin/faults).
std::string FaultsToJson(const FaultConfig& faults);

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_CONFIG_H_
