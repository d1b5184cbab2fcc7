#include "daemon/engines/process_engine.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/atomic_file.h"
#include "common/json_quote.h"
#include "common/status_macros.h"
#include "daemon/core/passed_env.h"
#include "daemon/engines/http_client.h"
#include "daemon/engines/render_common.h"
#include "daemon/placement/process_launcher.h"

namespace servelab::engines {
namespace {

constexpr int kLogTailLines = 20;
constexpr absl::Duration kFirstPoll = absl::Milliseconds(10);
constexpr absl::Duration kMaxPoll = absl::Milliseconds(200);
// A single health probe never waits longer than this, so a hung instance
// cannot hide that its process has died.
constexpr absl::Duration kHealthProbeTimeout = absl::Seconds(1);

// One process of an instance: rank 0 from the instance's own fields, then
// every extra rank.
struct Process {
  int dp_rank = 0;
  int pid = 0;
  int64_t start_ticks = 0;
  int port = 0;
  std::string log_path;
  v1::PlacedProcess placed;
  // Where to connect: the placement's address (instances from before
  // placements were recorded listen on loopback).
  std::string host() const { return placed.host().empty() ? kLoopbackHost : placed.host(); }
  placement::PlacedProcess identity() const {
    return placement::FromProto(placed, pid, start_ticks);
  }
};

std::vector<Process> ProcessesOf(const v1::ServingInstance& instance) {
  std::vector<Process> all = {{0, instance.pid(), instance.process_start_ticks(), instance.port(),
                               instance.log_path(), instance.placed()}};
  for (const v1::RankProcess& r : instance.extra_ranks()) {
    all.push_back(
        {r.dp_rank(), r.pid(), r.process_start_ticks(), r.port(), r.log_path(), r.placed()});
  }
  return all;
}

std::string Describe(const v1::ServingInstance& instance, const Process& p) {
  std::string where = p.placed.kind() == v1::PLACEMENT_KIND_SLURM
                          ? absl::StrCat("Slurm step ", p.placed.step_id(), " on ", p.placed.node())
                          : absl::StrCat("pid ", p.pid);
  return absl::StrCat(
      SideLabel(instance.side()),
      instance.extra_ranks_size() > 0 ? absl::StrCat(" rank ", p.dp_rank) : std::string(),
      " instance (", where, ", port ", p.port, ")");
}

// The local-only set of an engine no daemon gave one (unit tests).
placement::PlacementSet& LocalOnlyPlacements() {
  static auto* set = new placement::PlacementSet({});
  return *set;
}

}  // namespace

ServingProtocol VllmProtocol() {
  ServingProtocol p;
  // vLLM's toy_proxy_server.py (tests/v1/kv_connector/nixl_integration/)
  // and vllm-ascend's load_balance_proxy_server_example.py answer only
  // /healthcheck; servelab-sim's router answers /health.
  p.router_health_paths = {"/health", "/healthcheck"};
  // vllm/v1/metrics/loggers.py (PrometheusStatLogger). KV usage was
  // vllm:gpu_cache_usage_perc before it became vllm:kv_cache_usage_perc.
  p.counters = {"vllm:num_requests_running",
                "vllm:num_requests_waiting",
                "vllm:request_success_total",
                "vllm:prompt_tokens_total",
                "vllm:generation_tokens_total",
                "vllm:prefix_cache_queries_total",
                "vllm:prefix_cache_hits_total",
                {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
                {}};
  // vllm/entrypoints/openai/api_server.py registers POST /reset_prefix_cache
  // only under VLLM_SERVER_DEV_MODE and answers 200 whatever the engine
  // core's reset_prefix_cache returned (it returns False while blocks are in
  // use), so a 200 proves nothing.
  p.reset_needs_confirmation = true;
  return p;
}

ServingProtocol SglangProtocol() {
  ServingProtocol p;
  // python/sglang/srt/entrypoints/http_server.py: /flush_cache answers 200
  // only when the scheduler flushed (it refuses unless idle) and 400
  // otherwise, so its answer is the confirmation.
  p.reset_prefix_cache_path = "/flush_cache";
  p.reset_needs_confirmation = false;
  // python/sglang/srt/metrics/collector.py. SGLang counts cached prompt
  // tokens but not "queried" tokens; every prompt token is a query, so the
  // hit ratio is hits / prompt tokens. The P/D queue gauges count requests
  // between the prefill and decode queues (bootstrap, KV transfer). Releases
  // spell prefill's names differently (an "infight" typo in older ones,
  // "bootstrap" for "prealloc" in newer ones); each has one set, so the sum
  // over every spelling counts each queue once.
  p.counters = {
      "sglang:num_running_reqs",
      "sglang:num_queue_reqs",
      "sglang:num_requests_total",
      "sglang:prompt_tokens_total",
      "sglang:generation_tokens_total",
      "sglang:prompt_tokens_total",
      "sglang:cached_tokens_total",
      {"sglang:token_usage"},
      {"sglang:num_prefill_prealloc_queue_reqs", "sglang:num_prefill_bootstrap_queue_reqs",
       "sglang:num_prefill_inflight_queue_reqs", "sglang:num_prefill_infight_queue_reqs",
       "sglang:num_decode_prealloc_queue_reqs", "sglang:num_decode_transfer_queue_reqs"}};
  return p;
}

core::InstanceCounters CountersFromSamples(const MetricSamples& samples,
                                           const CounterNames& names) {
  auto sum = [&](const std::string& name) { return name.empty() ? 0.0 : SumMetric(samples, name); };
  core::InstanceCounters c;
  c.requests_running = sum(names.requests_running);
  c.requests_waiting = sum(names.requests_waiting);
  c.request_success = sum(names.request_success);
  c.prompt_tokens = sum(names.prompt_tokens);
  c.generation_tokens = sum(names.generation_tokens);
  c.prefix_cache_queries = sum(names.prefix_cache_queries);
  c.prefix_cache_hits = sum(names.prefix_cache_hits);
  for (const std::string& name : names.kv_cache_usage) c.kv_cache_usage += sum(name);
  for (const std::string& name : names.requests_in_transfer) c.requests_in_transfer += sum(name);
  return c;
}

placement::PlacementSet& ProcessEngine::placements() {
  return placements_ != nullptr ? *placements_ : LocalOnlyPlacements();
}

absl::StatusOr<v1::RankProcess> ProcessEngine::Spawn(const core::LaunchCommand& command,
                                                     const std::vector<std::string>& argv,
                                                     const std::map<std::string, std::string>& env,
                                                     const std::string& log_path,
                                                     const std::string& name) {
  SERVELAB_ASSIGN_OR_RETURN(placement::Placement * where, placements().ForSpec(command.placement));
  placement::PlacementRequest request{argv, env, log_path, name, command.node, command.devices};
  SERVELAB_RETURN_IF_ERROR(core::AddPassedEnv(command, request.env));
  if (!placements().owner().empty()) request.env[placement::kOwnerVariable] = placements().owner();
  SERVELAB_ASSIGN_OR_RETURN(placement::PlacedProcess placed, where->Spawn(request));
  v1::RankProcess process;
  process.set_pid(placed.pid);
  process.set_process_start_ticks(placed.start_ticks);
  process.set_log_path(log_path);
  *process.mutable_placed() = placement::ToProto(placed);
  placements().Annotate(*process.mutable_placed());
  absl::StatusOr<std::string> host = where->Address(placed);
  if (!host.ok()) {
    where->Stop(placed, absl::Seconds(5)).IgnoreError();
    return host.status();
  }
  process.mutable_placed()->set_host(*host);
  return process;
}

absl::StatusOr<v1::ServingInstance> ProcessEngine::Launch(const core::LaunchCommand& command) {
  for (const auto& [path, content] : command.files) {
    absl::Status written = WriteFileAtomically(path, content);
    if (!written.ok()) return written;
  }
  const std::string label = SideLabel(command.side);
  SERVELAB_ASSIGN_OR_RETURN(v1::RankProcess first,
                            Spawn(command, command.argv, command.env, command.log_path, label));
  v1::ServingInstance instance;
  instance.set_side(command.side);
  instance.set_pid(first.pid());
  instance.set_process_start_ticks(first.process_start_ticks());
  instance.set_port(command.port);
  instance.set_log_path(command.log_path);
  instance.set_served_model(command.served_model);
  *instance.mutable_placed() = first.placed();
  for (const core::RankCommand& rank : command.extra_ranks) {
    absl::StatusOr<v1::RankProcess> started = Spawn(command, rank.argv, rank.env, rank.log_path,
                                                    absl::StrCat(label, "-rank", rank.dp_rank));
    if (!started.ok()) {
      // All ranks or none: a side with a missing rank cannot serve.
      Stop(instance, absl::Seconds(5)).IgnoreError();
      return started.status();
    }
    v1::RankProcess& r = *instance.add_extra_ranks();
    r = *started;
    r.set_dp_rank(rank.dp_rank);
    r.set_port(rank.port);
  }
  absl::Time now = absl::Now();
  int64_t seconds = absl::ToUnixSeconds(now);
  instance.mutable_launched_at()->set_seconds(seconds);
  instance.mutable_launched_at()->set_nanos(
      static_cast<int32_t>((now - absl::FromUnixSeconds(seconds)) / absl::Nanoseconds(1)));
  return instance;
}

absl::Status ProcessEngine::WaitReady(const v1::ServingInstance& instance, absl::Time deadline) {
  const std::vector<std::string> paths = instance.side() == v1::SIDE_ROUTER
                                             ? protocol_.router_health_paths
                                             : std::vector<std::string>{protocol_.health_path};
  for (const Process& p : ProcessesOf(instance)) {
    std::string last_answer = "no probe answered yet";
    absl::Duration pause = kFirstPoll;
    bool ready = false;
    while (!ready) {
      // Checked before each probe so that a process that died is reported as
      // such even if something else now answers on its port.
      if (!placement::Alive(p.pid, p.start_ticks)) {
        return absl::FailedPreconditionError(
            absl::StrCat(Describe(instance, p), " exited before it became ready; last lines of ",
                         p.log_path, ":\n", placement::LogTail(p.log_path, kLogTailLines)));
      }
      for (const std::string& path : paths) {
        absl::Duration left = deadline - absl::Now();
        if (left <= absl::ZeroDuration()) break;
        absl::StatusOr<HttpResponse> r =
            HttpGet(p.host(), p.port, path, std::min(left, kHealthProbeTimeout));
        if (r.ok() && r->status == 200) {
          ready = true;
          break;
        }
        last_answer = r.ok() ? absl::StrCat("GET ", path, " answered ", r->status, " ", r->body)
                             : std::string(r.status().message());
      }
      if (ready) break;
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(absl::StrCat(
            Describe(instance, p), " not ready by the deadline; last probe: ", last_answer));
      }
      absl::SleepFor(std::min(pause, deadline - absl::Now()));
      pause = std::min(pause * 2, kMaxPoll);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> ProcessEngine::Alive(const v1::ServingInstance& instance) {
  for (const Process& p : ProcessesOf(instance)) {
    absl::StatusOr<placement::Placement*> where = placements().ForProcess(p.placed);
    // FAILED_PRECONDITION: its Slurm job has ended, and every step with it.
    if (absl::IsFailedPrecondition(where.status())) return false;
    SERVELAB_RETURN_IF_ERROR(where.status());
    SERVELAB_ASSIGN_OR_RETURN(bool alive, (*where)->Alive(p.identity()));
    if (!alive) return false;
  }
  return true;
}

absl::Status ProcessEngine::Stop(const v1::ServingInstance& instance, absl::Duration grace) {
  absl::Status first_error;
  for (const Process& p : ProcessesOf(instance)) {
    absl::StatusOr<placement::Placement*> where = placements().ForProcess(p.placed);
    if (absl::IsFailedPrecondition(where.status())) continue;  // Its job has ended.
    absl::Status stopped = where.ok() ? (*where)->Stop(p.identity(), grace) : where.status();
    if (!stopped.ok() && first_error.ok()) first_error = stopped;
  }
  return first_error;
}

absl::StatusOr<std::vector<std::string>> ReleaseUnusedAllocations(
    placement::PlacementSet& placements, const std::vector<v1::ServingInstance>& kept) {
  std::vector<v1::PlacedProcess> still_running;
  for (const v1::ServingInstance& instance : kept) {
    for (const Process& p : ProcessesOf(instance)) still_running.push_back(p.placed);
  }
  SERVELAB_ASSIGN_OR_RETURN(std::vector<std::string> jobs, placements.ReleaseUnused(still_running));
  for (std::string& job : jobs) job = absl::StrCat("Slurm job ", job);
  return jobs;
}

std::vector<int> StopUnrecordedInstances(placement::PlacementSet& placements,
                                         const std::vector<v1::ServingInstance>& recorded,
                                         absl::Duration grace) {
  std::vector<int> pids;
  for (const v1::ServingInstance& instance : recorded) {
    for (const Process& p : ProcessesOf(instance)) pids.push_back(p.pid);
  }
  return placements.StopUnrecorded(pids, grace);
}

absl::StatusOr<std::vector<std::string>> ProcessEngine::ReleaseUnusedPlacements(
    const std::vector<v1::ServingInstance>& kept) {
  return ReleaseUnusedAllocations(placements(), kept);
}

absl::StatusOr<core::InstanceCounters> ProcessEngine::Scrape(const v1::ServingInstance& instance) {
  core::InstanceCounters total;
  for (const Process& p : ProcessesOf(instance)) {
    absl::StatusOr<HttpResponse> r =
        HttpGet(p.host(), p.port, protocol_.metrics_path, protocol_.request_timeout);
    if (!r.ok()) return r.status();
    if (r->status != 200) {
      return absl::UnavailableError(absl::StrCat(Describe(instance, p), ": GET ",
                                                 protocol_.metrics_path, " answered ", r->status));
    }
    absl::StatusOr<MetricSamples> samples = ParsePrometheusText(r->body);
    if (!samples.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(instance, p), ": ", samples.status().message()));
    }
    core::InstanceCounters c = CountersFromSamples(*samples, protocol_.counters);
    total.requests_running += c.requests_running;
    total.requests_waiting += c.requests_waiting;
    total.request_success += c.request_success;
    total.prompt_tokens += c.prompt_tokens;
    total.generation_tokens += c.generation_tokens;
    total.prefix_cache_queries += c.prefix_cache_queries;
    total.prefix_cache_hits += c.prefix_cache_hits;
    total.kv_cache_usage = std::max(total.kv_cache_usage, c.kv_cache_usage);
    total.requests_in_transfer += c.requests_in_transfer;
  }
  return total;
}

absl::Status ProcessEngine::ResetPrefixCache(const v1::ServingInstance& instance) {
  if (protocol_.reset_prefix_cache_path.empty()) {
    return absl::FailedPreconditionError("this engine has no prefix-cache reset endpoint");
  }
  for (const Process& p : ProcessesOf(instance)) {
    absl::StatusOr<HttpResponse> r = HttpPost(p.host(), p.port, protocol_.reset_prefix_cache_path,
                                              "", protocol_.request_timeout);
    if (!r.ok()) return r.status();
    if (r->status == 404) {
      return absl::FailedPreconditionError(absl::StrCat(
          Describe(instance, p), ": POST ", protocol_.reset_prefix_cache_path,
          " answered 404 (vLLM serves it only with VLLM_SERVER_DEV_MODE=1 in its environment)"));
    }
    if (r->status != 200) {
      return absl::UnavailableError(absl::StrCat(Describe(instance, p), ": POST ",
                                                 protocol_.reset_prefix_cache_path, " answered ",
                                                 r->status, " ", r->body));
    }
  }
  return absl::OkStatus();
}

absl::Status ProcessEngine::SendCacheCheckRequest(const v1::ServingInstance& instance,
                                                  const std::string& prompt) {
  std::string body = "{";
  if (!instance.served_model().empty()) {
    absl::StrAppend(&body, "\"model\":", JsonQuote(instance.served_model()), ",");
  }
  absl::StrAppend(&body, "\"prompt\":", JsonQuote(prompt), ",\"max_tokens\":1,\"stream\":false}");
  for (const Process& p : ProcessesOf(instance)) {
    absl::StatusOr<HttpResponse> r =
        HttpPost(p.host(), p.port, "/v1/completions", body, protocol_.request_timeout);
    if (!r.ok()) return r.status();
    if (r->status != 200) {
      return absl::UnavailableError(absl::StrCat(Describe(instance, p),
                                                 ": probe POST /v1/completions answered ",
                                                 r->status, " ", r->body));
    }
  }
  return absl::OkStatus();
}

std::string ProcessEngine::BaseUrl(const v1::ServingInstance& instance) {
  return HostUrl(ProcessesOf(instance)[0].host(), instance.port());
}

}  // namespace servelab::engines
