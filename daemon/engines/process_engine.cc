#include "daemon/engines/process_engine.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "daemon/engines/http_probe.h"
#include "daemon/engines/process_launcher.h"
#include "daemon/engines/render_common.h"

namespace servelab::engines {
namespace {

constexpr int kLogTailLines = 20;
constexpr absl::Duration kFirstPoll = absl::Milliseconds(10);
constexpr absl::Duration kMaxPoll = absl::Milliseconds(200);
// A single health probe never waits longer than this, so a hung instance
// cannot hide that its process has died.
constexpr absl::Duration kHealthProbeTimeout = absl::Seconds(1);

absl::Status WriteFileAtomically(const std::string& path, const std::string& content) {
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    if (!out.good()) {
      return absl::FailedPreconditionError(absl::StrCat("cannot write ", path));
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("cannot write ", path, ": ", ec.message()));
  return absl::OkStatus();
}

std::string Describe(const v1::ServingInstance& instance) {
  return absl::StrCat(SideName(instance.side()), " instance (pid ", instance.pid(), ", port ",
                      instance.port(), ")");
}

}  // namespace

ServingProtocol VllmProtocol() {
  ServingProtocol p;
  p.router_health_paths = {"/health", "/healthcheck"};
  p.counters = {"vllm:num_requests_running",   "vllm:num_requests_waiting",
                "vllm:request_success_total",  "vllm:prompt_tokens_total",
                "vllm:generation_tokens_total", "vllm:prefix_cache_queries_total",
                "vllm:prefix_cache_hits_total"};
  return p;
}

ServingProtocol SglangProtocol() {
  ServingProtocol p;
  p.reset_prefix_cache_path = "/flush_cache";
  // SGLang counts cached prompt tokens but not "queried" tokens; every
  // prompt token is a query, so the hit ratio is hits / prompt tokens.
  p.counters = {"sglang:num_running_reqs",       "sglang:num_queue_reqs",
                "sglang:num_requests_total",     "sglang:prompt_tokens_total",
                "sglang:generation_tokens_total", "sglang:prompt_tokens_total",
                "sglang:cached_tokens_total"};
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
  return c;
}

absl::StatusOr<v1::ServingInstance> ProcessEngine::Launch(const core::LaunchCommand& command) {
  for (const auto& [path, content] : command.files) {
    absl::Status written = WriteFileAtomically(path, content);
    if (!written.ok()) return written;
  }
  absl::StatusOr<StartedProcess> process =
      StartProcess(command.argv, command.env, command.log_path);
  if (!process.ok()) return process.status();
  v1::ServingInstance instance;
  instance.set_side(command.side);
  instance.set_pid(process->pid);
  instance.set_process_start_ticks(process->start_ticks);
  instance.set_port(command.port);
  instance.set_log_path(command.log_path);
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
  std::string last_answer = "no probe answered yet";
  absl::Duration pause = kFirstPoll;
  while (true) {
    // Checked before each probe so that a process that died is reported as
    // such even if something else now answers on its port.
    if (!Alive(instance)) {
      return absl::FailedPreconditionError(
          absl::StrCat(Describe(instance), " exited before it became ready; last lines of ",
                       instance.log_path(), ":\n", LogTail(instance.log_path(), kLogTailLines)));
    }
    for (const std::string& path : paths) {
      absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) break;
      absl::StatusOr<HttpResponse> r =
          HttpGet(instance.port(), path, std::min(left, kHealthProbeTimeout));
      if (r.ok() && r->status == 200) return absl::OkStatus();
      last_answer = r.ok() ? absl::StrCat("GET ", path, " answered ", r->status, " ", r->body)
                           : std::string(r.status().message());
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(Describe(instance), " not ready by the deadline; last probe: ", last_answer));
    }
    absl::SleepFor(std::min(pause, deadline - absl::Now()));
    pause = std::min(pause * 2, kMaxPoll);
  }
}

bool ProcessEngine::Alive(const v1::ServingInstance& instance) {
  return engines::Alive(instance.pid(), instance.process_start_ticks());
}

absl::Status ProcessEngine::Stop(const v1::ServingInstance& instance, absl::Duration grace) {
  return engines::Stop(instance.pid(), instance.process_start_ticks(), grace);
}

absl::StatusOr<core::InstanceCounters> ProcessEngine::Scrape(const v1::ServingInstance& instance) {
  absl::StatusOr<HttpResponse> r =
      HttpGet(instance.port(), protocol_.metrics_path, protocol_.probe_timeout);
  if (!r.ok()) return r.status();
  if (r->status != 200) {
    return absl::UnavailableError(absl::StrCat(Describe(instance), ": GET ", protocol_.metrics_path,
                                               " answered ", r->status));
  }
  absl::StatusOr<MetricSamples> samples = ParsePrometheusText(r->body);
  if (!samples.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(instance), ": ", samples.status().message()));
  }
  return CountersFromSamples(*samples, protocol_.counters);
}

absl::Status ProcessEngine::ResetPrefixCache(const v1::ServingInstance& instance) {
  if (protocol_.reset_prefix_cache_path.empty()) {
    return absl::UnimplementedError("this engine has no prefix-cache reset endpoint");
  }
  absl::StatusOr<HttpResponse> r =
      HttpPost(instance.port(), protocol_.reset_prefix_cache_path, "", protocol_.probe_timeout);
  if (!r.ok()) return r.status();
  if (r->status != 200) {
    return absl::UnavailableError(absl::StrCat(Describe(instance), ": POST ",
                                               protocol_.reset_prefix_cache_path, " answered ",
                                               r->status, " ", r->body));
  }
  return absl::OkStatus();
}

std::string ProcessEngine::BaseUrl(const v1::ServingInstance& instance) {
  return LoopbackUrl(instance.port());
}

}  // namespace servelab::engines
