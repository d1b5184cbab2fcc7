#include "sim/instance_model.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace servelab::sim {
namespace {

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double SecondsBetween(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int64_t BlocksFor(int64_t tokens, int64_t block_size) {
  return (tokens + block_size - 1) / block_size;
}

}  // namespace

InstanceModel::InstanceModel(const SimConfig& config, Role role, uint64_t seed, double time_scale,
                             CompatOptions compat)
    : config_(config),
      role_(role),
      time_scale_(time_scale),
      cost_(config_),
      compat_(compat),
      kv_lease_(Scaled(config.kv_lease_seconds.value_or(DefaultKvLeaseSeconds(compat.compat)))),
      rng_(seed),
      faults_(config.faults),
      ready_at_(SteadyClock::now()),
      cache_(config.block_size, config.num_gpu_blocks),
      ttft_(TtftBuckets()),
      e2e_(E2eBuckets()),
      itl_(InterTokenBuckets()),
      queue_(E2eBuckets()) {
  // The configured slow start is a one-shot addition to the load time, not a
  // standing fault.
  faults_.slow_start_seconds = 0;
  faults_.refuse_connections_seconds = 0;
}

std::chrono::nanoseconds InstanceModel::Scaled(double modelled_seconds, double jitter) const {
  double ns = modelled_seconds * time_scale_ * jitter * 1e9;
  return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(std::max(ns, 0.0))));
}

void InstanceModel::EnterLoading(double modelled_seconds) {
  absl::MutexLock lock(&mu_);
  ready_at_ = std::max(ready_at_, SteadyClock::now() + Scaled(modelled_seconds));
}

bool InstanceModel::Ready() const {
  absl::MutexLock lock(&mu_);
  return SteadyClock::now() >= ready_at_;
}

double InstanceModel::Uniform() {
  return static_cast<double>(rng_() >> 11) * (1.0 / 9007199254740992.0);
}

std::unique_ptr<RequestState> InstanceModel::Arrive(GenerationRequest request, RequestMeta meta) {
  auto r = std::make_unique<RequestState>();
  r->request = std::move(request);
  r->meta = std::move(meta);
  const SteadyClock::time_point now = SteadyClock::now();
  r->arrival = r->meta.received == SteadyClock::time_point{} ? now : r->meta.received;
  r->arrival_unix = UnixNow() - SecondsBetween(r->arrival, now);
  absl::MutexLock lock(&mu_);
  r->id = ++next_id_;
  ++received_;
  ++in_flight_;
  // Always the same five draws, whatever the config, so enabling a fault does
  // not shift the durations of the other requests.
  double jitter_draw = Uniform(), error_draw = Uniform(), hang_draw = Uniform(),
         drop_draw = Uniform();
  uint64_t request_seed = rng_();
  r->jitter = 1.0 + config_.jitter * (2 * jitter_draw - 1);
  r->text_seed = request_seed;
  r->error_status = faults_.error_status;
  if (faults_.error_next > 0) {
    --faults_.error_next;
    r->fault = FaultAction::kError;
  } else if (error_draw < faults_.error_fraction) {
    r->fault = FaultAction::kError;
  } else if (faults_.hang_next > 0) {
    --faults_.hang_next;
    r->fault = FaultAction::kHang;
  } else if (hang_draw < faults_.hang_fraction) {
    r->fault = FaultAction::kHang;
  } else if (faults_.drop_next > 0) {
    --faults_.drop_next;
    r->fault = FaultAction::kDrop;
  } else if (drop_draw < faults_.drop_fraction) {
    r->fault = FaultAction::kDrop;
  }
  const GenerationRequest& q = r->request;
  r->output_tokens = q.max_tokens;
  r->finish_reason = "length";
  r->drop_after_tokens = faults_.drop_after_tokens;
  if (!q.ignore_eos && config_.eos_probability > 0) {
    std::mt19937_64 eos_rng(request_seed);
    for (int64_t n = std::max<int64_t>(q.min_tokens, 1); n < q.max_tokens; ++n) {
      if (static_cast<double>(eos_rng() >> 11) * (1.0 / 9007199254740992.0) <
          config_.eos_probability) {
        r->output_tokens = n;
        r->finish_reason = "stop";
        break;
      }
    }
  }
  if (!r->meta.load_tag.empty()) {
    LoadWitness& w = loads_[r->meta.load_tag];
    if (w.arrived == 0) w.first_arrival_unix = r->arrival_unix;
    ++w.arrived;
    ++w.in_flight;
  }
  return r;
}

bool InstanceModel::CanAdmit(const RequestState& r) const {
  if (running_ >= config_.max_num_seqs) return false;
  int64_t need = BlocksFor(static_cast<int64_t>(r.request.prompt_tokens.size()) + r.output_tokens,
                           config_.block_size);
  // A request larger than the whole KV cache still runs alone rather than never.
  return (running_ == 0 && leases_.empty()) ||
         reserved_blocks_ + leased_blocks_ + need <= config_.num_gpu_blocks;
}

void InstanceModel::AdmitWaiters(std::vector<std::function<void()>>& wakes) {
  while (!waiting_.empty() && CanAdmit(*waiting_.front().request)) {
    Admit(*waiting_.front().request);
    wakes.push_back(std::move(waiting_.front().wake));
    waiting_.pop_front();
  }
}

void InstanceModel::DropExpiredLeases(SteadyClock::time_point now) {
  while (!leases_.empty() && leases_.front().expires <= now) {
    leased_blocks_ -= leases_.front().blocks;
    leases_.pop_front();
  }
}

void InstanceModel::ExpireLeases() {
  std::vector<std::function<void()>> wakes;
  {
    absl::MutexLock lock(&mu_);
    DropExpiredLeases(SteadyClock::now());
    AdmitWaiters(wakes);
  }
  for (auto& wake : wakes) wake();
}

double InstanceModel::KvUsage() const {
  return std::min(1.0, static_cast<double>(reserved_blocks_ + leased_blocks_) /
                           static_cast<double>(config_.num_gpu_blocks));
}

void InstanceModel::Admit(RequestState& r) {
  r.admitted = true;
  r.admitted_at = SteadyClock::now();
  r.reserved_blocks = BlocksFor(
      static_cast<int64_t>(r.request.prompt_tokens.size()) + r.output_tokens, config_.block_size);
  reserved_blocks_ += r.reserved_blocks;
  ++running_;
  queue_.Observe(SecondsBetween(r.arrival, r.admitted_at));
}

bool InstanceModel::TryAdmit(RequestState& r, std::function<void()> wake) {
  absl::MutexLock lock(&mu_);
  if (waiting_.empty() && CanAdmit(r)) {
    Admit(r);
    return true;
  }
  waiting_.push_back(Waiter{&r, std::move(wake)});
  return false;
}

std::chrono::nanoseconds InstanceModel::StartPrefill(RequestState& r) {
  absl::MutexLock lock(&mu_);
  const std::vector<int64_t>& tokens = r.request.prompt_tokens;
  const int64_t prompt_len = static_cast<int64_t>(tokens.size());
  r.cached_tokens = config_.enable_prefix_caching ? cache_.Lookup(tokens) : 0;
  cache_queries_ += prompt_len;
  cache_hits_ += r.cached_tokens;
  prompt_tokens_ += prompt_len;
  double seconds;
  if (r.request.kv_transferred) {
    // The prefill instance computed the prompt; this side pulls the KV it does
    // not already hold, then runs one decode step for the first token.
    int64_t transferred = prompt_len - r.cached_tokens;
    kv_transfer_tokens_ += transferred;
    r.in_kv_transfer = true;
    ++kv_transfers_;
    seconds = cost_.KvTransferSeconds(transferred) + cost_.DecodeStepSeconds(running_);
  } else {
    seconds = cost_.PrefillSeconds(prompt_len - r.cached_tokens, prefilling_);
  }
  if (prefills_started_ < config_.cold_start_requests)
    seconds += config_.cold_start_penalty_seconds;
  ++prefills_started_;
  ++prefilling_;
  return Scaled(seconds, r.jitter);
}

void InstanceModel::EndPrefill(RequestState& r) {
  absl::MutexLock lock(&mu_);
  --prefilling_;
  if (r.in_kv_transfer) {
    r.in_kv_transfer = false;
    --kv_transfers_;
  }
  if (config_.enable_prefix_caching) cache_.Insert(r.request.prompt_tokens);
}

SteadyClock::time_point InstanceModel::NextTokenDue(SteadyClock::time_point previous) {
  absl::MutexLock lock(&mu_);
  const std::chrono::nanoseconds step = Scaled(cost_.DecodeStepSeconds(running_));
  if (previous >= step_end_) {
    if (running_ > 1 && step_end_ != SteadyClock::time_point{}) {
      // Others are running, so the steps went on back to back, whether or
      // not their requests have asked yet (a busy sim resumes them late):
      // on to the step in progress at `previous`, keeping the phase.
      step_start_ = step_end_ + (previous - step_end_) / step * step;
    } else {
      // An idle engine (or one yet to decode) starts a step with the
      // request that asks.
      step_start_ = previous;
    }
    step_end_ = step_start_ + step;
  }
  // Waiting as the step started: in that step. Further behind (a busy sim
  // resumed it late): in each step it missed, all overdue, so its tokens
  // go out together and it loses none of the steps.
  if (previous <= step_start_) return std::min(previous + step, step_end_);
  // Mid-step (a first token, from a prefill that ended between steps): in
  // the next one, whose length this one's batch guesses.
  return step_end_ + step;
}

void InstanceModel::OnToken(RequestState& r) {
  SteadyClock::time_point now = SteadyClock::now();
  absl::MutexLock lock(&mu_);
  if (r.generated == 0) {
    r.ttft_seconds = SecondsBetween(r.arrival, now);
    ttft_.Observe(r.ttft_seconds);
  } else {
    itl_.Observe(SecondsBetween(r.last_token, now));
  }
  r.last_token = now;
  ++r.generated;
  if (role_ != Role::kRouter) ++generation_tokens_;
}

std::chrono::nanoseconds InstanceModel::Finish(RequestState& r, Outcome outcome, int http_status) {
  SteadyClock::time_point now = SteadyClock::now();
  std::vector<std::function<void()>> wakes;
  std::chrono::nanoseconds lease{0};
  bool exit_now = false;
  int exit_code = 0;
  {
    absl::MutexLock lock(&mu_);
    --in_flight_;
    if (r.in_kv_transfer) {
      r.in_kv_transfer = false;
      --kv_transfers_;
    }
    if (r.admitted) {
      --running_;
      reserved_blocks_ -= r.reserved_blocks;
      r.admitted = false;
      DropExpiredLeases(now);
      if (role_ == Role::kPrefill && r.request.remote_decode && outcome == Outcome::kSuccess &&
          kv_lease_.count() > 0) {
        // The blocks stay in use until the decode side has pulled them.
        lease = kv_lease_;
        leases_.push_back(Lease{now + lease, r.reserved_blocks});
        leased_blocks_ += r.reserved_blocks;
      }
      AdmitWaiters(wakes);
    } else {
      // Finished before admission (error fault, or the client went away while queued).
      std::erase_if(waiting_, [&](const Waiter& w) { return w.request == &r; });
    }
    const char* outcome_name = "success";
    switch (outcome) {
      case Outcome::kSuccess:
        ++(absl::string_view(r.finish_reason) == "stop" ? success_stop_ : success_length_);
        e2e_.Observe(SecondsBetween(r.arrival, now));
        break;
      case Outcome::kError:
        outcome_name = "error";
        break;
      case Outcome::kDropped:
        outcome_name = "dropped";
        break;
      case Outcome::kAborted:
        outcome_name = "aborted";
        break;
    }
    if (outcome != Outcome::kSuccess) ++failed_[outcome_name];
    double queue_seconds = r.admitted_at.time_since_epoch().count() == 0
                               ? 0
                               : SecondsBetween(r.arrival, r.admitted_at);
    history_.push_back(FinishedRecord{
        r.id, r.meta.request_id, r.meta.load_tag, r.arrival_unix, http_status, outcome_name,
        static_cast<int64_t>(r.request.prompt_tokens.size()), r.cached_tokens, r.generated,
        r.request.kv_transferred, queue_seconds, r.ttft_seconds, SecondsBetween(r.arrival, now)});
    while (static_cast<int64_t>(history_.size()) > config_.debug_request_history) {
      history_.pop_front();
    }
    if (!r.meta.load_tag.empty()) {
      LoadWitness& w = loads_[r.meta.load_tag];
      w.last_completion_unix = std::max(w.last_completion_unix, UnixNow());
      ++w.completed;
      --w.in_flight;
    }
    ++finished_;
    if (faults_.exit_after_requests > 0 && finished_ >= faults_.exit_after_requests) {
      exit_now = true;
      exit_code = faults_.exit_code;
    }
  }
  for (auto& wake : wakes) wake();
  if (exit_now) {
    if (auto log = spdlog::get("sim")) log->warn("fault: exit_after_requests reached, exiting");
    spdlog::shutdown();
    std::_Exit(exit_code);
  }
  return lease;
}

bool InstanceModel::ResetPrefixCache() {
  absl::MutexLock lock(&mu_);
  if (compat_.compat != Compat::kSim) {
    // vllm/v1/core/block_pool.py reset_prefix_cache: "Failed to reset prefix
    // cache because some blocks (%d) are not freed yet" -> False; SGLang's
    // Scheduler.flush_cache (python/sglang/srt/managers/scheduler.py) only
    // flushes when fully idle, the disaggregation queues included.
    DropExpiredLeases(SteadyClock::now());
    if (running_ > 0 || !waiting_.empty() || !leases_.empty()) return false;
  }
  cache_.Clear();
  return true;
}

absl::StatusOr<FaultEffects> InstanceModel::ApplyFaults(const JsonValue& body) {
  absl::MutexLock lock(&mu_);
  FaultConfig merged = faults_;
  absl::Status s = MergeFaults(body, merged);
  if (!s.ok()) return s;
  FaultEffects effects;
  if (merged.slow_start_seconds > 0) {
    ready_at_ = std::max(ready_at_, SteadyClock::now() + Scaled(merged.slow_start_seconds));
  }
  effects.refuse_connections = Scaled(merged.refuse_connections_seconds);
  // Both are one-shot actions, not standing state.
  merged.slow_start_seconds = 0;
  merged.refuse_connections_seconds = 0;
  faults_ = merged;
  return effects;
}

std::string InstanceModel::FaultsJson() const {
  absl::MutexLock lock(&mu_);
  return FaultsToJson(faults_);
}

std::string InstanceModel::Labels() const {
  return absl::StrCat("model_name=", QuoteLabelValue(config_.model), ",engine=\"0\"");
}

std::string InstanceModel::RenderMetrics() const {
  std::string out;
  out.reserve(8192);
  absl::MutexLock lock(&mu_);
  if (compat_.compat == Compat::kSglang) {
    RenderSglangMetrics(out);
  } else {
    RenderVllmMetrics(out);
  }
  return out;
}

namespace {

// Prometheus text for one gauge / one counter family. A counter's HELP and
// TYPE name its samples' name, _total included, as prometheus_client (so
// vLLM and SGLang) writes them: under the bare name, the parser files the
// samples as a separate untyped family without help.
void Gauge(absl::string_view name, absl::string_view help, absl::string_view labels, double v,
           std::string& out) {
  RenderHeader(name, "gauge", help, out);
  RenderSample(name, labels, v, out);
}
void Counter(absl::string_view name, absl::string_view help, absl::string_view labels, double v,
             std::string& out) {
  const std::string total = absl::StrCat(name, "_total");
  RenderHeader(total, "counter", help, out);
  RenderSample(total, labels, v, out);
}

}  // namespace

void InstanceModel::RenderVllmMetrics(std::string& out) const {
  // Names and help texts as vllm/v1/metrics/loggers.py spells them.
  std::string labels = Labels();
  // vllm/v1/core/sched/scheduler.py parks a request whose KV is still being
  // pulled (WAITING_FOR_REMOTE_KVS) in the waiting queue, its blocks already
  // allocated; the sim profile counts it as running, as it always has.
  const int64_t pulling = IsVllmFamily(compat_.compat) ? kv_transfers_ : 0;
  Gauge("vllm:num_requests_running", "Number of requests in model execution batches.", labels,
        static_cast<double>(role_ == Role::kRouter ? in_flight_ : running_ - pulling), out);
  Gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", labels,
        static_cast<double>(static_cast<int64_t>(waiting_.size()) + pulling), out);
  Gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", labels, KvUsage(),
        out);
  Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", labels, prompt_tokens_, out);
  Counter("vllm:generation_tokens", "Number of generation tokens processed.", labels,
          generation_tokens_, out);
  Counter("vllm:prefix_cache_queries",
          "Prefix cache queries, in terms of number of queried tokens.", labels, cache_queries_,
          out);
  Counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
          labels, cache_hits_, out);
  RenderHeader("vllm:request_success_total", "counter", "Count of successfully processed requests.",
               out);
  RenderSample("vllm:request_success_total", absl::StrCat(labels, ",finished_reason=\"length\""),
               success_length_, out);
  RenderSample("vllm:request_success_total", absl::StrCat(labels, ",finished_reason=\"stop\""),
               success_stop_, out);
  ttft_.Render("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
               labels, out);
  e2e_.Render("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
              labels, out);
  itl_.Render("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              labels, out);
  queue_.Render("vllm:request_queue_time_seconds",
                "Histogram of time spent in WAITING phase for request.", labels, out);
  RenderServelabMetrics(labels, out);
}

void InstanceModel::RenderSglangMetrics(std::string& out) const {
  // Names and help texts as python/sglang/srt/metrics/collector.py spells
  // them (SchedulerMetricsCollector and TokenizerMetricsCollector); the
  // histogram buckets are the sim's (vLLM's), not SGLang's.
  const char* engine_type = role_ == Role::kPrefill  ? "prefill"
                            : role_ == Role::kDecode ? "decode"
                                                     : "unified";
  std::string labels =
      absl::StrCat("model_name=", QuoteLabelValue(config_.model), ",engine_type=\"", engine_type,
                   "\",tp_rank=\"0\",pp_rank=\"0\"");
  // In SGLang's decode mode a request waits in the prealloc queue and then
  // the transfer queue before it joins the waiting queue / running batch
  // (python/sglang/srt/disaggregation/decode.py), so those are not counted
  // as queued or running here.
  int64_t prealloc = 0;
  for (const Waiter& w : waiting_) prealloc += w.request->request.kv_transferred ? 1 : 0;
  const bool decode = role_ == Role::kDecode;
  const int64_t running =
      role_ == Role::kRouter ? in_flight_ : running_ - (decode ? kv_transfers_ : 0);
  const int64_t queued = static_cast<int64_t>(waiting_.size()) - (decode ? prealloc : 0);
  const int64_t used_blocks = reserved_blocks_ + leased_blocks_;
  Gauge("sglang:num_running_reqs", "The number of running requests.", labels,
        static_cast<double>(running), out);
  Gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", labels,
        static_cast<double>(queued), out);
  Gauge("sglang:num_used_tokens", "The number of used tokens.", labels,
        static_cast<double>(used_blocks * config_.block_size), out);
  Gauge("sglang:token_usage", "The token usage.", labels, KvUsage(), out);
  Gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.",
        labels, static_cast<double>(config_.num_gpu_blocks * config_.block_size), out);
  Gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", labels,
        cache_queries_ == 0
            ? 0.0
            : static_cast<double>(cache_hits_) / static_cast<double>(cache_queries_),
        out);
  // P/D queues. The sim's bootstrap handshake is instantaneous, so the
  // prefill prealloc (bootstrap) queue is always empty; the prefill inflight
  // queue holds the leases (prefill done, KV not yet taken by decode).
  Gauge("sglang:num_prefill_prealloc_queue_reqs",
        "The number of requests in the prefill prealloc queue.", labels, 0, out);
  Gauge("sglang:num_prefill_inflight_queue_reqs",
        "The number of requests in the prefill inflight queue.", labels,
        static_cast<double>(leases_.size()), out);
  Gauge("sglang:num_decode_prealloc_queue_reqs",
        "The number of requests in the decode prealloc queue.", labels,
        static_cast<double>(decode ? prealloc : 0), out);
  Gauge("sglang:num_decode_transfer_queue_reqs",
        "The number of requests in the decode transfer queue.", labels,
        static_cast<double>(decode ? kv_transfers_ : 0), out);
  Counter("sglang:prompt_tokens", "Number of prefill tokens processed.", labels, prompt_tokens_,
          out);
  Counter("sglang:generation_tokens", "Number of generation tokens processed.", labels,
          generation_tokens_, out);
  Counter("sglang:cached_tokens", "Number of cached prompt tokens.", labels, cache_hits_, out);
  Counter("sglang:num_requests", "Number of requests processed.", labels, finished_, out);
  auto aborted = failed_.find("aborted");
  Counter("sglang:num_aborted_requests", "Number of requests aborted.", labels,
          aborted == failed_.end() ? 0 : aborted->second, out);
  ttft_.Render("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
               labels, out);
  itl_.Render("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              labels, out);
  e2e_.Render("sglang:e2e_request_latency_seconds",
              "Histogram of End-to-end request latency in seconds", labels, out);
  queue_.Render("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", labels, out);
  RenderServelabMetrics(labels, out);
}

void InstanceModel::RenderServelabMetrics(const std::string& labels, std::string& out) const {
  // servelab extras (in no engine): raw arrivals, failures, KV transfer, witness.
  RenderHeader("servelab_sim_info", "gauge", "Role and model of this sim instance.", out);
  RenderSample("servelab_sim_info",
               absl::StrCat(labels, ",role=\"", RoleName(role_), "\",compat=\"",
                            CompatName(compat_.compat), "\""),
               1, out);
  Counter("servelab_sim_requests_received", "Generation requests received (valid ones).", labels,
          received_, out);
  RenderHeader("servelab_sim_requests_failed_total", "counter",
               "Requests that did not succeed, by outcome.", out);
  for (const char* o : {"error", "dropped", "aborted"}) {
    auto it = failed_.find(o);
    RenderSample("servelab_sim_requests_failed_total", absl::StrCat(labels, ",outcome=\"", o, "\""),
                 it == failed_.end() ? 0 : it->second, out);
  }
  Counter("servelab_sim_kv_transfer_tokens", "Prompt tokens received by KV transfer.", labels,
          kv_transfer_tokens_, out);
  Gauge("servelab_sim_kv_leases", "Remote-decode requests whose KV blocks are still leased.",
        labels, static_cast<double>(leases_.size()), out);
  RenderHeader("servelab_sim_load_first_arrival_timestamp_seconds", "gauge",
               "Unix time of the first request carrying x-servelab-load.", out);
  for (const auto& [tag, w] : loads_) {
    RenderSample("servelab_sim_load_first_arrival_timestamp_seconds",
                 absl::StrCat("load=", QuoteLabelValue(tag)), w.first_arrival_unix, out);
  }
  RenderHeader("servelab_sim_load_last_completion_timestamp_seconds", "gauge",
               "Unix time the last request carrying x-servelab-load ended.", out);
  for (const auto& [tag, w] : loads_) {
    RenderSample("servelab_sim_load_last_completion_timestamp_seconds",
                 absl::StrCat("load=", QuoteLabelValue(tag)), w.last_completion_unix, out);
  }
  RenderHeader("servelab_sim_load_in_flight", "gauge", "Requests of a load not yet ended.", out);
  for (const auto& [tag, w] : loads_) {
    RenderSample("servelab_sim_load_in_flight", absl::StrCat("load=", QuoteLabelValue(tag)),
                 w.in_flight, out);
  }
}

std::string InstanceModel::DebugRequestsJson() const {
  absl::MutexLock lock(&mu_);
  std::string out = "{\"requests\":[";
  bool first = true;
  for (const FinishedRecord& f : history_) {
    if (!first) out += ',';
    first = false;
    absl::StrAppend(
        &out, "{\"id\":", f.id, ",\"request_id\":", JsonQuote(f.request_id),
        ",\"load\":", JsonQuote(f.load_tag),
        ",\"arrival_unix\":", absl::StrFormat("%.6f", f.arrival_unix),
        ",\"http_status\":", f.http_status, ",\"outcome\":\"", f.outcome,
        "\",\"prompt_tokens\":", f.prompt_tokens, ",\"cached_tokens\":", f.cached_tokens,
        ",\"completion_tokens\":", f.completion_tokens,
        ",\"kv_transferred\":", f.kv_transferred ? "true" : "false",
        ",\"queue_seconds\":", absl::StrFormat("%.6f", f.queue_seconds), ",\"ttft_seconds\":",
        f.ttft_seconds < 0 ? std::string("null") : absl::StrFormat("%.6f", f.ttft_seconds),
        ",\"e2e_seconds\":", absl::StrFormat("%.6f", f.e2e_seconds), "}");
  }
  absl::StrAppend(&out, "],\"in_flight\":", in_flight_, ",\"running\":", running_,
                  ",\"waiting\":", waiting_.size(), "}");
  return out;
}

std::string InstanceModel::LoadsJson() const {
  absl::MutexLock lock(&mu_);
  std::string out = "{\"loads\":{";
  bool first = true;
  for (const auto& [tag, w] : loads_) {
    if (!first) out += ',';
    first = false;
    absl::StrAppend(&out, JsonQuote(tag),
                    ":{\"first_arrival_unix\":", absl::StrFormat("%.6f", w.first_arrival_unix),
                    ",\"last_completion_unix\":", absl::StrFormat("%.6f", w.last_completion_unix),
                    ",\"arrived\":", w.arrived, ",\"completed\":", w.completed,
                    ",\"in_flight\":", w.in_flight, "}");
  }
  out += "}}";
  return out;
}

}  // namespace servelab::sim
