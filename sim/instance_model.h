// InstanceModel: the simulated serving instance's state — admission (max_num_seqs
// and KV blocks, FIFO waiting queue), the prefix cache, the latency model,
// fault decisions, metrics, the per-load overlap witness and the recent
// request log. It decides *how long* things take; the HTTP layer (server.cc)
// does the waiting on timers and the writing, so this class has no I/O and no
// Asio, and unit tests can drive it directly.
//
// Request lifecycle, in the order the server calls it:
//   auto r = instance.Arrive(std::move(request), meta);   // fault decided here
//   if (!instance.TryAdmit(*r, wake)) { ...wait until wake() runs... }
//   wait(instance.StartPrefill(*r)); instance.EndPrefill(*r);
//   for each token: (i > 0: wait until due = instance.NextTokenDue(due))
//                   instance.OnToken(*r);
//   lease = instance.Finish(*r, outcome, http_status);
//   if (lease > 0) { ...after lease: instance.ExpireLeases()... }
// The router role only calls Arrive / OnToken / Finish.
//
// KV lease: on a prefill instance, a successful request with
// kv_transfer_params.do_remote_decode keeps its blocks in use for
// kv_lease_seconds after it finished (the decode side is pulling them), so
// KV usage stays > 0, admission counts them and a vLLM/SGLang-style prefix
// cache reset is refused until the lease ends.
//
// Determinism: every random draw happens in Arrive, a fixed number per
// request, from one generator seeded with --seed, so a seed and an arrival
// order give the same durations, lengths and faults.
//
// Thread-safe: all state is guarded by mu_. `wake` callbacks run without the
// lock held, on the thread that freed the slot; they must only post.
#ifndef SERVELAB_SIM_INSTANCE_MODEL_H_
#define SERVELAB_SIM_INSTANCE_MODEL_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "sim/compat.h"
#include "sim/config.h"
#include "sim/cost_model.h"
#include "sim/metrics.h"
#include "sim/prefix_cache.h"
#include "sim/request.h"

namespace servelab::sim {

using SteadyClock = std::chrono::steady_clock;

enum class FaultAction { kNone, kHang, kError, kDrop };
enum class Outcome { kSuccess, kError, kDropped, kAborted };

struct RequestMeta {
  std::string request_id;  // x-request-id, echoed in /debug/requests
  std::string load_tag;    // x-servelab-load, the overlap witness key
  // When the request's first byte was read: its arrival, where TTFT and
  // queue time start (docs/design.md §10, "TTFT fidelity"). Unset: Arrive's
  // own time.
  SteadyClock::time_point received{};
};

// One request's state; owned by the HTTP handler, updated by the InstanceModel.
struct RequestState {
  uint64_t id = 0;
  RequestMeta meta;
  GenerationRequest request;
  FaultAction fault = FaultAction::kNone;
  int error_status = 503;         // for FaultAction::kError
  int64_t drop_after_tokens = 1;  // for FaultAction::kDrop
  int64_t output_tokens = 0;      // planned completion length
  const char* finish_reason = "length";
  uint64_t text_seed = 0;
  double jitter = 1.0;
  int64_t cached_tokens = 0;
  int64_t generated = 0;
  int64_t reserved_blocks = 0;
  bool admitted = false;
  bool in_kv_transfer = false;  // decode side, between StartPrefill and EndPrefill
  SteadyClock::time_point arrival;
  SteadyClock::time_point admitted_at;
  SteadyClock::time_point last_token;
  double arrival_unix = 0;
  double ttft_seconds = -1;
};

// What POST /admin/faults asks the HTTP layer to do besides updating state.
struct FaultEffects {
  std::chrono::nanoseconds refuse_connections{0};
};

class InstanceModel {
 public:
  // `compat` selects the metric names and the reset rule; the sim profile
  // by default.
  InstanceModel(const SimConfig& config, Role role, uint64_t seed, double time_scale,
                CompatOptions compat = {});
  InstanceModel(const InstanceModel&) = delete;
  InstanceModel& operator=(const InstanceModel&) = delete;

  const SimConfig& config() const { return config_; }
  Role role() const { return role_; }
  const CompatOptions& compat() const { return compat_; }
  // A modelled duration scaled by --time-scale (and `jitter`).
  std::chrono::nanoseconds Scaled(double modelled_seconds, double jitter = 1.0) const;

  // Loading: /health is 503 and generation is refused until the (scaled) time
  // has passed. Called at start with load_time + faults.slow_start, and by
  // the slow_start fault at run time.
  void EnterLoading(double modelled_seconds);
  bool Ready() const;

  std::unique_ptr<RequestState> Arrive(GenerationRequest request, RequestMeta meta);
  // True when admitted now; otherwise queued and `wake` runs once admitted.
  bool TryAdmit(RequestState& r, std::function<void()> wake);
  // Prefill (or, for a transferred prompt on the decode side, the KV transfer
  // plus the first decode step) up to the first token.
  std::chrono::nanoseconds StartPrefill(RequestState& r);
  void EndPrefill(RequestState& r);
  // When the next token of a request whose previous token was due at
  // `previous` falls due: the end of the decode step it joins. The instance
  // decodes its running requests in shared steps, back to back while any
  // asks (the step's length from its batch size when it starts), so the
  // tokens of one step fall due together, as an engine's do: vLLM's engine
  // core hands the API server one step's outputs at once. A request joins the
  // latest step when it was waiting as that step started, and the step after
  // it when its previous token came mid-step (a first token, from a prefill
  // that ended between steps). Design §10, "Decode steps".
  SteadyClock::time_point NextTokenDue(SteadyClock::time_point previous);
  // A token was written to the client (the first one defines server-side TTFT).
  void OnToken(RequestState& r);
  // Ends the request, frees its slot, records it. May exit the process when
  // faults.exit_after_requests is reached (after the response was written).
  // Returns the (scaled) KV lease the request left behind, 0 if none: the
  // caller runs ExpireLeases() once it has passed.
  std::chrono::nanoseconds Finish(RequestState& r, Outcome outcome, int http_status);
  // Ends the leases whose time has passed and admits waiters they blocked.
  void ExpireLeases();

  // Clears the prefix cache. The sim profile always does; the others refuse
  // (false, nothing evicted) while any KV block is in use: running or
  // waiting requests, or a lease.
  bool ResetPrefixCache();
  absl::StatusOr<FaultEffects> ApplyFaults(const JsonValue& body);
  std::string FaultsJson() const;

  std::string RenderMetrics() const;
  std::string DebugRequestsJson() const;  // GET /debug/requests
  std::string LoadsJson() const;          // GET /debug/loads

 private:
  struct Waiter {
    RequestState* request;
    std::function<void()> wake;
  };
  struct FinishedRecord {
    uint64_t id;
    std::string request_id;
    std::string load_tag;
    double arrival_unix;
    int http_status;
    const char* outcome;
    int64_t prompt_tokens, cached_tokens, completion_tokens;
    bool kv_transferred;
    double queue_seconds, ttft_seconds, e2e_seconds;
  };
  struct LoadWitness {
    double first_arrival_unix = 0;
    double last_completion_unix = 0;
    int64_t arrived = 0;
    int64_t completed = 0;
    int64_t in_flight = 0;
  };

  double Uniform() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  struct Lease {
    SteadyClock::time_point expires;
    int64_t blocks;
  };

  bool CanAdmit(const RequestState& r) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Admit(RequestState& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Admits waiters from the front while they fit; collects their wakes.
  void AdmitWaiters(std::vector<std::function<void()>>& wakes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropExpiredLeases(SteadyClock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  double KvUsage() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string Labels() const;
  void RenderVllmMetrics(std::string& out) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RenderSglangMetrics(std::string& out) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RenderServelabMetrics(const std::string& labels, std::string& out) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const SimConfig config_;
  const Role role_;
  const double time_scale_;
  const CostModel cost_;
  const CompatOptions compat_;
  const std::chrono::nanoseconds kv_lease_;  // scaled

  mutable absl::Mutex mu_;
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
  FaultConfig faults_ ABSL_GUARDED_BY(mu_);
  SteadyClock::time_point ready_at_ ABSL_GUARDED_BY(mu_);
  PrefixCache cache_ ABSL_GUARDED_BY(mu_);
  std::deque<Waiter> waiting_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t running_ ABSL_GUARDED_BY(mu_) = 0;    // admitted, not finished
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // arrived, not finished
  int64_t prefilling_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t reserved_blocks_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t kv_transfers_ ABSL_GUARDED_BY(mu_) = 0;  // requests in_kv_transfer
  // The latest decode step NextTokenDue started (none yet: both at epoch).
  SteadyClock::time_point step_start_ ABSL_GUARDED_BY(mu_);
  SteadyClock::time_point step_end_ ABSL_GUARDED_BY(mu_);
  // Leases in expiry order (all have the same duration).
  std::deque<Lease> leases_ ABSL_GUARDED_BY(mu_);
  int64_t leased_blocks_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t prefills_started_ ABSL_GUARDED_BY(mu_) = 0;  // for the cold start
  int64_t finished_ ABSL_GUARDED_BY(mu_) = 0;
  // Counters (vLLM names in RenderMetrics).
  uint64_t received_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t prompt_tokens_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_tokens_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t cache_queries_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t cache_hits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t kv_transfer_tokens_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t success_length_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t success_stop_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, uint64_t> failed_ ABSL_GUARDED_BY(mu_);
  Histogram ttft_ ABSL_GUARDED_BY(mu_);
  Histogram e2e_ ABSL_GUARDED_BY(mu_);
  Histogram itl_ ABSL_GUARDED_BY(mu_);
  Histogram queue_ ABSL_GUARDED_BY(mu_);
  std::deque<FinishedRecord> history_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, LoadWitness> loads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_INSTANCE_MODEL_H_
