#include "analysis/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analysis/percentile.h"
#include "google/protobuf/util/time_util.h"

namespace servelab::analysis {
namespace {

using google::protobuf::util::TimeUtil;

constexpr double kNsPerSecond = 1e9;
constexpr int kMaxDeviatingIndexes = 100;

double Seconds(int64_t ns) { return static_cast<double>(ns) / kNsPerSecond; }

bool Sent(const v1::RequestRecord& r) { return r.end_ns() > 0; }

bool Completed(const v1::RequestRecord& r) {
  return Sent(r) && r.error().empty() && r.http_status() >= 200 && r.http_status() < 300;
}

struct Bounds {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool empty = true;
};

Bounds WholeBounds(const std::vector<const v1::RequestRecord*>& records) {
  Bounds b;
  for (const auto* r : records) {
    if (!Sent(*r)) continue;
    if (b.empty) {
      b = {r->sent_ns(), r->end_ns(), false};
    } else {
      b.start_ns = std::min(b.start_ns, r->sent_ns());
      b.end_ns = std::max(b.end_ns, r->end_ns());
    }
  }
  return b;
}

Bounds SteadyBounds(const std::vector<const v1::RequestRecord*>& records, int threshold) {
  // (time, delta); at equal times ends (-1) sort before starts (+1), so a
  // request handing its slot to the next one at the same instant is seen as
  // a dip, never as C + 1 in flight.
  std::vector<std::pair<int64_t, int>> events;
  for (const auto* r : records) {
    if (!Sent(*r)) continue;
    events.emplace_back(r->sent_ns(), +1);
    events.emplace_back(r->end_ns(), -1);
  }
  std::sort(events.begin(), events.end());
  Bounds b;
  int in_flight = 0;
  for (const auto& [t, delta] : events) {
    int before = in_flight;
    in_flight += delta;
    if (b.empty && in_flight >= threshold) {
      b.start_ns = t;
      b.empty = false;
    }
    if (!b.empty && before >= threshold && in_flight < threshold) b.end_ns = t;
  }
  if (!b.empty && b.end_ns < b.start_ns) b = Bounds{};  // Never dropped: cannot happen.
  return b;
}

bool MeetsSlo(const v1::RequestRecord& r, const v1::SloSpec& slo) {
  double e2e = Seconds(r.end_ns() - r.sent_ns());
  if (slo.has_e2e() && e2e > TimeUtil::DurationToNanoseconds(slo.e2e()) / kNsPerSecond) {
    return false;
  }
  bool has_token = r.first_token_ns() > 0;
  double ttft = has_token ? Seconds(r.first_token_ns() - r.sent_ns()) : e2e;
  if (slo.has_ttft() && ttft > TimeUtil::DurationToNanoseconds(slo.ttft()) / kNsPerSecond) {
    return false;
  }
  if (slo.has_tpot() && has_token && r.completion_tokens() > 1) {
    double tpot = (e2e - ttft) / (r.completion_tokens() - 1);
    if (tpot > TimeUtil::DurationToNanoseconds(slo.tpot()) / kNsPerSecond) return false;
  }
  return true;
}

v1::WindowResult Window(const std::string& name, const Bounds& bounds,
                        const std::vector<const v1::RequestRecord*>& records,
                        const v1::AnalysisSpec& spec, int device_count) {
  v1::WindowResult w;
  w.set_name(name);
  if (bounds.empty) return w;
  w.set_start_seconds(Seconds(bounds.start_ns));
  w.set_end_seconds(Seconds(bounds.end_ns));
  double duration = Seconds(bounds.end_ns - bounds.start_ns);
  w.set_duration_seconds(duration);

  std::vector<double> ttft, tpot, itl, e2e;
  int64_t completed = 0, failed = 0, output_tokens = 0, good = 0;
  for (const auto* r : records) {
    if (!Sent(*r) || r->end_ns() < bounds.start_ns || r->end_ns() > bounds.end_ns) continue;
    if (!Completed(*r)) {
      ++failed;
      continue;
    }
    ++completed;
    output_tokens += r->completion_tokens();
    if (MeetsSlo(*r, spec.slo())) ++good;
    double e2e_s = Seconds(r->end_ns() - r->sent_ns());
    e2e.push_back(e2e_s);
    if (r->first_token_ns() > 0) {
      double ttft_s = Seconds(r->first_token_ns() - r->sent_ns());
      ttft.push_back(ttft_s);
      if (r->completion_tokens() > 1)
        tpot.push_back((e2e_s - ttft_s) / (r->completion_tokens() - 1));
    }
    for (int i = 1; i < r->chunk_ns_size(); ++i) {
      itl.push_back(Seconds(r->chunk_ns(i) - r->chunk_ns(i - 1)));
    }
  }
  w.set_requests_completed(completed);
  w.set_requests_failed(failed);
  w.set_output_tokens(output_tokens);
  if (duration > 0) {
    w.set_request_throughput(completed / duration);
    w.set_output_tokens_per_second(output_tokens / duration);
    if (device_count > 0)
      w.set_output_tokens_per_second_per_device(output_tokens / duration / device_count);
    w.set_goodput(good / duration);
  }
  std::vector<double> extra(spec.percentiles().begin(), spec.percentiles().end());
  *w.mutable_ttft() = Summarize(std::move(ttft), extra);
  *w.mutable_tpot() = Summarize(std::move(tpot), extra);
  *w.mutable_itl() = Summarize(std::move(itl), extra);
  *w.mutable_e2e() = Summarize(std::move(e2e), extra);
  return w;
}

absl::Status Validate(const v1::ExperimentSpec& spec) {
  const v1::AnalysisSpec& a = spec.analysis();
  if (a.device_count() < 0) return absl::InvalidArgumentError("analysis.device_count must be >= 0");
  double f = a.steady_min_inflight_fraction();
  if (!(f >= 0 && f <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("analysis.steady_min_inflight_fraction must be in [0, 1], got ", f));
  }
  for (double p : a.percentiles()) {
    if (!(p > 0 && p <= 100)) {
      return absl::InvalidArgumentError(
          absl::StrCat("analysis.percentiles must be in (0, 100], got ", p));
    }
  }
  if (spec.workload().concurrency() < 0) {
    return absl::InvalidArgumentError("workload.concurrency must be >= 0");
  }
  return absl::OkStatus();
}

using Records = std::vector<const v1::RequestRecord*>;

// Per-phase wall time and summed latency, phases in enum order.
void AddPhaseTimings(const std::map<v1::Phase, Records>& by_phase, v1::Result& result) {
  for (const auto& [phase, rs] : by_phase) {
    v1::PhaseTiming* t = result.add_phases();
    t->set_phase(phase);
    t->set_requests(static_cast<int64_t>(rs.size()));
    Bounds b = WholeBounds(rs);
    if (!b.empty) t->set_wall_seconds(Seconds(b.end_ns - b.start_ns));
    int64_t summed = 0;
    for (const auto* r : rs) {
      if (Sent(*r)) summed += r->end_ns() - r->sent_ns();
    }
    t->set_summed_request_latency_seconds(Seconds(summed));
  }
}

// The in-flight count the steady window needs: the fraction of C, at least 1.
int SteadyThreshold(const v1::ExperimentSpec& spec) {
  const v1::AnalysisSpec& a = spec.analysis();
  double fraction = a.steady_min_inflight_fraction() > 0 ? a.steady_min_inflight_fraction() : 1.0;
  return std::max(1, static_cast<int>(std::ceil(fraction * spec.workload().concurrency() - 1e-9)));
}

// Whether the completed request `r` got the token counts it asked for.
void CountExactness(const v1::RequestRecord& r, v1::Exactness& exact) {
  exact.set_requests(exact.requests() + 1);
  bool in_ok = r.requested_prompt_tokens() == 0 || r.requested_prompt_tokens() == r.prompt_tokens();
  bool out_ok = r.requested_completion_tokens() == 0 ||
                r.requested_completion_tokens() == r.completion_tokens();
  if (in_ok) exact.set_exact_input(exact.exact_input() + 1);
  if (out_ok) exact.set_exact_output(exact.exact_output() + 1);
  if ((!in_ok || !out_ok) && exact.deviating_index_size() < kMaxDeviatingIndexes) {
    exact.add_deviating_index(r.request_index());
  }
  if (r.chunk_ns_size() != r.completion_tokens()) {
    exact.set_chunk_count_mismatch(exact.chunk_count_mismatch() + 1);
  }
}

// Over the analyzed requests: the client's schedule lag and queue time, the
// prefix cache hit ratio and the exactness counts.
void AddClientStats(const Records& selected, v1::Result& result) {
  std::vector<double> lag, queue;
  int64_t prompt_tokens = 0, cached_tokens = 0;
  bool cached_reported = false;
  // Set even when no request completed: the result always carries the counts.
  v1::Exactness& exact = *result.mutable_exactness();
  for (const auto* r : selected) {
    if (!Sent(*r)) continue;
    lag.push_back(Seconds(r->sent_ns() - r->planned_send_ns()));
    queue.push_back(Seconds(r->queued_ns()));
    if (!Completed(*r)) continue;
    prompt_tokens += r->prompt_tokens();
    // vLLM omits prompt_tokens_details when nothing was cached, so once any
    // request reported, an absent count is 0; if none did, the ratio is
    // unknown, not 0.
    if (r->cached_tokens() >= 0) {
      cached_tokens += r->cached_tokens();
      cached_reported = true;
    }
    CountExactness(*r, exact);
  }
  lag = SortedCopy(std::move(lag));
  queue = SortedCopy(std::move(queue));
  result.set_schedule_lag_p50(Percentile(lag, 50));
  result.set_schedule_lag_p99(Percentile(lag, 99));
  result.set_client_queue_p50(Percentile(queue, 50));
  result.set_client_queue_p99(Percentile(queue, 99));
  result.set_cached_tokens_reported(cached_reported);
  if (prompt_tokens > 0 && cached_reported) {
    result.set_prefix_cache_hit_ratio(static_cast<double>(cached_tokens) / prompt_tokens);
  }
}

}  // namespace

int ResolveDeviceCount(const v1::ExperimentSpec& spec) {
  if (spec.analysis().device_count() > 0) return spec.analysis().device_count();
  return spec.deployment().prefill().devices_size() + spec.deployment().decode().devices_size();
}

absl::StatusOr<v1::Result> Analyze(const std::vector<v1::RequestRecord>& records,
                                   const v1::ExperimentSpec& spec) {
  if (absl::Status s = Validate(spec); !s.ok()) return s;
  if (records.empty()) return absl::InvalidArgumentError("no request records to analyze");

  v1::Result result;
  int device_count = ResolveDeviceCount(spec);
  result.set_device_count(device_count);

  std::map<v1::Phase, Records> by_phase;
  for (const auto& r : records) by_phase[r.phase()].push_back(&r);
  AddPhaseTimings(by_phase, result);

  // The formal load when there is one, else every record.
  v1::Phase analyzed = v1::PHASE_UNSPECIFIED;
  Records selected;
  if (by_phase.count(v1::PHASE_FORMAL)) {
    analyzed = v1::PHASE_FORMAL;
    selected = by_phase[v1::PHASE_FORMAL];
  } else {
    for (const auto& r : records) selected.push_back(&r);
  }
  result.set_analyzed_phase(analyzed);

  const v1::AnalysisSpec& a = spec.analysis();
  *result.mutable_whole() = Window("whole", WholeBounds(selected), selected, a, device_count);
  int threshold = SteadyThreshold(spec);
  Bounds steady = spec.workload().concurrency() > 0 ? SteadyBounds(selected, threshold) : Bounds{};
  *result.mutable_steady() = Window("steady", steady, selected, a, device_count);
  result.mutable_steady()->set_steady_min_inflight(threshold);

  AddClientStats(selected, result);
  // vLLM's toy proxy relays decode's usage untouched (vllm-ascend's
  // load-balance proxy writes prefill's count in; sgl-router's decode takes it
  // from prefill's bootstrap). docs/design.md §9.
  result.set_cached_tokens_from_decode(spec.deployment().engine() == v1::ENGINE_VLLM);
  return result;
}

}  // namespace servelab::analysis
