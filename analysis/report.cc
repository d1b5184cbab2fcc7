#include "analysis/report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace servelab::analysis {
namespace {

std::string Num(double v) { return absl::StrFormat("%.4f", v); }
std::string Ms(double seconds) { return absl::StrFormat("%.3f", seconds * 1e3); }

std::string Line(const std::string& label, const std::string& whole, const std::string& steady) {
  return absl::StrFormat("  %-30s %16s %16s\n", label, whole, steady);
}

void Latency(std::string& out, const std::string& name, const v1::LatencyStats& w,
             const v1::LatencyStats& s) {
  out += Line(name + " mean (ms)", Ms(w.mean()), Ms(s.mean()));
  out += Line(name + " p50 (ms)", Ms(w.p50()), Ms(s.p50()));
  out += Line(name + " p90 (ms)", Ms(w.p90()), Ms(s.p90()));
  out += Line(name + " p99 (ms)", Ms(w.p99()), Ms(s.p99()));
  out += Line(name + " max (ms)", Ms(w.max()), Ms(s.max()));
  for (int i = 0; i < w.percentiles_size() && i < s.percentiles_size(); ++i) {
    out += Line(absl::StrFormat("%s p%g (ms)", name, w.percentiles(i).percentile()),
                Ms(w.percentiles(i).value()), Ms(s.percentiles(i).value()));
  }
}

}  // namespace

std::string FormatResult(const v1::Result& r) {
  const v1::WindowResult& w = r.whole();
  const v1::WindowResult& s = r.steady();
  std::string out;
  out += absl::StrFormat("Analysis of phase %s (%d devices)\n", v1::Phase_Name(r.analyzed_phase()),
                         r.device_count());
  out += Line("window", "whole", absl::StrCat("steady (>=", s.steady_min_inflight(), ")"));
  out += Line("bounds (s since load start)",
              absl::StrFormat("%.3f-%.3f", w.start_seconds(), w.end_seconds()),
              s.duration_seconds() > 0
                  ? absl::StrFormat("%.3f-%.3f", s.start_seconds(), s.end_seconds())
                  : std::string("never reached"));
  out += Line("duration (s)", Num(w.duration_seconds()), Num(s.duration_seconds()));
  out += Line("requests completed", absl::StrCat(w.requests_completed()),
              absl::StrCat(s.requests_completed()));
  out +=
      Line("requests failed", absl::StrCat(w.requests_failed()), absl::StrCat(s.requests_failed()));
  out += Line("output tokens", absl::StrCat(w.output_tokens()), absl::StrCat(s.output_tokens()));
  out +=
      Line("request throughput (req/s)", Num(w.request_throughput()), Num(s.request_throughput()));
  out +=
      Line("output tokens/s", Num(w.output_tokens_per_second()), Num(s.output_tokens_per_second()));
  out += Line("output tokens/s per device", Num(w.output_tokens_per_second_per_device()),
              Num(s.output_tokens_per_second_per_device()));
  out += Line("goodput (req/s)", Num(w.goodput()), Num(s.goodput()));
  Latency(out, "TTFT", w.ttft(), s.ttft());
  Latency(out, "TPOT", w.tpot(), s.tpot());
  Latency(out, "ITL", w.itl(), s.itl());
  Latency(out, "E2E", w.e2e(), s.e2e());
  out += absl::StrFormat("Schedule lag (sent - planned): p50 %.3f ms, p99 %.3f ms\n",
                         r.schedule_lag_p50() * 1e3, r.schedule_lag_p99() * 1e3);
  out += absl::StrFormat("Client queue (wait for a slot under C): p50 %.3f ms, p99 %.3f ms\n",
                         r.client_queue_p50() * 1e3, r.client_queue_p99() * 1e3);
  const v1::Exactness& e = r.exactness();
  out += absl::StrFormat(
      "Exactness: %d/%d exact input, %d/%d exact output, %d chunk-count mismatches%s\n",
      e.exact_input(), e.requests(), e.exact_output(), e.requests(), e.chunk_count_mismatch(),
      e.deviating_index_size() > 0 ? " (DEVIATIONS)" : "");
  if (e.deviating_index_size() > 0) {
    out += "  deviating request indexes:";
    for (int i : e.deviating_index()) out += absl::StrCat(" ", i);
    out += "\n";
  }
  out += r.cached_tokens_reported()
             ? absl::StrFormat("Prefix-cache hit ratio (client, from usage): %.4f%s\n",
                               r.prefix_cache_hit_ratio(),
                               r.cached_tokens_from_decode()
                                   ? " (decode's count: the KV it loaded from prefill, not "
                                     "prefix hits)"
                                   : "")
             : std::string(
                   "Prefix-cache hit ratio (client, from usage): not reported (the server "
                   "sent no cached_tokens)\n");
  for (const v1::PhaseTiming& p : r.phases()) {
    out += absl::StrFormat("Phase %s: %d requests, wall %.3f s, summed request latency %.3f s\n",
                           v1::Phase_Name(p.phase()), p.requests(), p.wall_seconds(),
                           p.summed_request_latency_seconds());
  }
  return out;
}

}  // namespace servelab::analysis
