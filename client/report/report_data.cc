#include "client/report/report_data.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

namespace servelab::client::report {
namespace {

constexpr double kNsPerSecond = 1e9;

double Seconds(int64_t ns) { return static_cast<double>(ns) / kNsPerSecond; }

int RepeatOf(const v1::RequestRecord& record) { return std::max(1, record.repeat()); }

bool InRun(const v1::RequestRecord& record, RunKey run) {
  return record.attempt() == run.attempt && RepeatOf(record) == run.repeat;
}

void AppendSamples(const v1::RequestRecord& r, Latency latency, std::vector<double>* out) {
  bool has_token = r.first_token_ns() > 0;
  switch (latency) {
    case Latency::kTtft:
      if (has_token) out->push_back(Seconds(r.first_token_ns() - r.sent_ns()));
      break;
    case Latency::kTpot:
      if (has_token && r.completion_tokens() > 1) {
        out->push_back(Seconds(r.end_ns() - r.first_token_ns()) / (r.completion_tokens() - 1));
      }
      break;
    case Latency::kItl:
      for (int i = 1; i < r.chunk_ns_size(); ++i) {
        out->push_back(Seconds(r.chunk_ns(i) - r.chunk_ns(i - 1)));
      }
      break;
    case Latency::kE2e:
      out->push_back(Seconds(r.end_ns() - r.sent_ns()));
      break;
  }
}

// Every change of the in-flight count as two points (before, after); equal
// times are one change, so a request handing its slot to the next at the
// same instant draws no spike.
std::vector<InflightPoint> StepPoints(const std::vector<v1::RequestRecord>& records, RunKey run) {
  std::vector<std::pair<int64_t, int>> events;
  for (const auto& r : records) {
    if (!InRun(r, run) || r.end_ns() <= 0) continue;
    events.emplace_back(r.sent_ns(), +1);
    events.emplace_back(r.end_ns(), -1);
  }
  std::sort(events.begin(), events.end());
  std::vector<InflightPoint> points;
  int level = 0;
  for (size_t i = 0; i < events.size();) {
    int64_t t = events[i].first;
    int before = level;
    for (; i < events.size() && events[i].first == t; ++i) level += events[i].second;
    if (level == before) continue;
    points.push_back({Seconds(t), before});
    points.push_back({Seconds(t), level});
  }
  return points;
}

std::vector<InflightPoint> MinMaxPerBucket(const std::vector<InflightPoint>& points,
                                           size_t buckets) {
  double first = points.front().seconds;
  double width = (points.back().seconds - first) / static_cast<double>(buckets);
  if (width <= 0) return {points.front(), points.back()};
  // Per bucket: index of its lowest and of its highest point (first seen).
  std::vector<std::pair<size_t, size_t>> extremes(buckets, {points.size(), points.size()});
  for (size_t i = 0; i < points.size(); ++i) {
    size_t b = std::min(buckets - 1, static_cast<size_t>((points[i].seconds - first) / width));
    auto& [low, high] = extremes[b];
    if (low == points.size() || points[i].in_flight < points[low].in_flight) low = i;
    if (high == points.size() || points[i].in_flight > points[high].in_flight) high = i;
  }
  std::vector<InflightPoint> out;
  for (const auto& [low, high] : extremes) {
    if (low == points.size()) continue;
    out.push_back(points[std::min(low, high)]);
    if (low != high) out.push_back(points[std::max(low, high)]);
  }
  return out;
}

}  // namespace

std::string LatencyName(Latency latency) {
  switch (latency) {
    case Latency::kTtft:
      return "TTFT";
    case Latency::kTpot:
      return "TPOT";
    case Latency::kItl:
      return "ITL";
    case Latency::kE2e:
      return "E2E";
  }
  return "?";
}

bool Completed(const v1::RequestRecord& record) {
  return record.end_ns() > 0 && record.error().empty() && record.http_status() >= 200 &&
         record.http_status() < 300;
}

std::vector<double> LatencySamples(const std::vector<v1::RequestRecord>& records, Latency latency) {
  std::vector<double> samples;
  for (const auto& r : records) {
    if (Completed(r)) AppendSamples(r, latency, &samples);
  }
  return samples;
}

std::vector<CdfPoint> EmpiricalCdf(std::vector<double> samples, size_t max_points) {
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  const size_t kept = std::min(n, std::max<size_t>(max_points, 2));
  std::vector<CdfPoint> cdf;
  cdf.reserve(kept);
  for (size_t k = 0; k < kept; ++k) {
    // Evenly spaced ranks; with kept == n every rank.
    size_t rank = kept == 1 ? 0
                            : static_cast<size_t>(std::llround(static_cast<double>(k) * (n - 1) /
                                                               static_cast<double>(kept - 1)));
    cdf.push_back({samples[rank], static_cast<double>(rank + 1) / static_cast<double>(n)});
  }
  return cdf;
}

RunKey WindowRun(const std::vector<v1::RequestRecord>& records) {
  RunKey run;
  if (records.empty()) return run;
  run.attempt = records.front().attempt();
  for (const auto& r : records) run.attempt = std::max(run.attempt, r.attempt());
  run.repeat = 0;
  for (const auto& r : records) {
    if (r.attempt() != run.attempt) continue;
    if (run.repeat == 0 || RepeatOf(r) < run.repeat) run.repeat = RepeatOf(r);
  }
  return run;
}

std::optional<absl::Time> LoadStart(const std::vector<v1::RequestRecord>& records, RunKey run) {
  for (const auto& r : records) {
    if (!InRun(r, run) || !r.has_load_start()) continue;
    return absl::FromUnixSeconds(r.load_start().seconds()) +
           absl::Nanoseconds(r.load_start().nanos());
  }
  return std::nullopt;
}

std::vector<InflightPoint> InflightSeries(const std::vector<v1::RequestRecord>& records, RunKey run,
                                          size_t max_points) {
  std::vector<InflightPoint> points = StepPoints(records, run);
  if (points.size() <= max_points) return points;
  return MinMaxPerBucket(points, std::max<size_t>(max_points / 2, 1));
}

}  // namespace servelab::client::report
