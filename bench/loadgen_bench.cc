// loadgen_bench: what the load generator itself costs and how faithfully it
// measures, against a servelab-sim on the same machine. Prints each figure
// beside its target (issue 4). A program that prints figures, not a test.
//
//   build/bin/loadgen_bench [--streams 200,1000,2000] [--rates 1000,5000]
//       [--output-tokens 150] [--decode-seconds 0.02] [--unpaced-tokens 1000]
//       [--client-core 0] [--sim-core 1] [--realtime-priority 1]
//
// Every run writes its records to an SQLite record file (the daemon's
// schema, one row per request, a transaction per batch), so the CPU figures
// include persisting them (issue 9, P3).
// Run A (one per --streams S): 2 x S requests, poisson at 1,000 req/s, at most
//   S in flight, each --output-tokens chunks paced by the sim's decode step
//   (--decode-seconds). Figures: peak concurrent streams, client CPU per
//   streamed chunk (process CPU: network thread + record writer; target
//   <= 5 us), and TTFT fidelity: client TTFT minus the sim's own server-side
//   TTFT (/debug/requests, joined by x-request-id; target p99 <= 1 ms), and
//   apart from it how long the client took to read first tokens.
// Run U (unpaced): 200 streams of --unpaced-tokens tokens from a sim with no
//   decode time: chunks received per client CPU second (target >= 200,000).
// Run B (one per --rates R): 3 s of R req/s poisson, short requests;
//   schedule lag = sent - planned (targets p99 <= 100 us at 1,000/s and
//   <= 200 us at 5,000/s). Before it, the floor: how late an idle thread on
//   the client core wakes from an absolute sleep, and how often a thread
//   that never sleeps is held up anyway (the host taking the vCPU).
// After each run A, the kernel floor at the same connections and pacing
// (loopback_floor.h): what a chunk costs with no code around it, with one
// syscall per chunk and with io_uring, each round's chunks all at once (as
// the sim's shared decode steps make them due) and spread over the round
// (as streams each paced on its own timer are).
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/percentile.h"
#include "bench/bench_common.h"
#include "bench/loopback_floor.h"
#include "loadgen/dataset.h"
#include "loadgen/load_runner.h"
#include "loadgen/realtime.h"
#include "loadgen/record_file.h"
#include "loadgen/schedule.h"

namespace servelab::bench {
namespace {

using loadgen::LoadOptions;
using loadgen::LoadRunner;

// Every run's LoadOptions::realtime_priority (--realtime-priority): the
// client measured as servelab-load and servelabd run it.
int client_realtime_priority = 1;

std::string Fetch(const std::string& url) {
  std::string cmd = absl::StrCat("/usr/bin/curl -s --max-time 30 ", url);
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[65536];
  size_t n;
  while (p != nullptr && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p != nullptr) pclose(p);
  return out;
}

void Figure(const std::string& name, double value, const std::string& unit,
            const std::string& target) {
  std::cout << absl::StrFormat("  %-48s %12.4f %-10s target: %s\n", name, value, unit, target);
}

// What the sim stamped for one request: when its first byte was read (wall
// clock, the machine's one CLOCK_REALTIME) and its server-side TTFT.
struct ServerStamp {
  double arrival_unix = 0;
  double ttft = 0;
};

// request_id -> the sim's stamps, from its /debug/requests.
std::map<std::string, ServerStamp> ServerStamps(const std::string& json) {
  std::map<std::string, ServerStamp> out;
  size_t at = 0;
  while ((at = json.find("\"request_id\":\"", at)) != std::string::npos) {
    at += 14;
    size_t end = json.find('"', at);
    std::string id = json.substr(at, end - at);
    size_t a = json.find("\"arrival_unix\":", end);
    size_t t = json.find("\"ttft_seconds\":", end);
    if (a == std::string::npos || t == std::string::npos) break;
    t += 15;
    if (json.compare(t, 4, "null") != 0) {
      out[id] = {std::atof(json.c_str() + a + 15), std::atof(json.c_str() + t)};
    }
    at = t;
  }
  return out;
}

// Where a request's TTFT gap (client TTFT - server TTFT) is spent: on the
// way in (the client starting to send -> the first byte reaching the sim's
// socket, by the kernel's stamp) and on the way out (the sim's first-token
// write -> the client's socket, by the kernel's stamp). The client's read
// comes after that stamp, by the read lag that run A prints apart.
struct GapLegs {
  double in = 0, out = 0;
};

GapLegs LegsOf(const v1::RequestRecord& r, const ServerStamp& s) {
  const double start = static_cast<double>(r.load_start().seconds()) + r.load_start().nanos() / 1e9;
  return {s.arrival_unix - (start + r.sent_ns() / 1e9),
          (start + r.first_token_ns() / 1e9) - (s.arrival_unix + s.ttft)};
}

// The gap's p99 and each leg's share of it: the legs' p50 and p99, and
// their means over the requests whose gap is at or above the p99.
void PrintGapLegs(std::vector<std::pair<double, GapLegs>> gaps) {
  if (gaps.empty()) return;
  std::sort(gaps.begin(), gaps.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<double> in, out;
  for (const auto& [gap, legs] : gaps) {
    in.push_back(legs.in);
    out.push_back(legs.out);
  }
  std::sort(in.begin(), in.end());
  std::sort(out.begin(), out.end());
  const size_t tail_from = std::min(gaps.size() - 1, gaps.size() * 99 / 100);
  double tail_in = 0, tail_out = 0;
  for (size_t i = tail_from; i < gaps.size(); ++i) {
    tail_in += gaps[i].second.in;
    tail_out += gaps[i].second.out;
  }
  const double tail = static_cast<double>(gaps.size() - tail_from);
  Figure("gap on the way in (send -> sim's socket) p50", analysis::Percentile(in, 50) * 1e3, "ms",
         "-");
  Figure("gap on the way in p99", analysis::Percentile(in, 99) * 1e3, "ms", "-");
  Figure("gap on the way out (sim writes -> client's socket) p50",
         analysis::Percentile(out, 50) * 1e3, "ms", "-");
  Figure("gap on the way out p99", analysis::Percentile(out, 99) * 1e3, "ms", "-");
  Figure("worst 1 % of gaps: mean on the way in", tail_in / tail * 1e3, "ms", "-");
  Figure("worst 1 % of gaps: mean on the way out", tail_out / tail * 1e3, "ms", "-");
}

int PeakInFlight(const std::vector<v1::RequestRecord>& rs) {
  std::vector<std::pair<int64_t, int>> ev;
  for (const auto& r : rs) {
    if (r.end_ns() == 0) continue;
    ev.emplace_back(r.sent_ns(), 1);
    ev.emplace_back(r.end_ns(), -1);
  }
  std::sort(ev.begin(), ev.end());
  int cur = 0, peak = 0;
  for (auto& [t, d] : ev) peak = std::max(peak, cur += d);
  return peak;
}

struct RunOutput {
  std::vector<v1::RequestRecord> records;
  loadgen::LoadSummary summary;
  double cpu_seconds = 0;
  double kernel_seconds = 0;  // Of cpu_seconds.
  double wall_seconds = 0;
};

// One load of n requests (at most c in flight) at `rate` req/s poisson; its
// records go to DIR/ID.sqlite and are read back from there.
RunOutput RunLoad(const std::string& url, const std::string& dir, const std::string& id, int n,
                  int c, double rate, int input, int output) {
  v1::ExperimentSpec spec;
  v1::WorkloadSpec& w = *spec.mutable_workload();
  w.set_request_rate(rate);
  w.set_arrival(v1::ARRIVAL_POISSON);
  w.mutable_dataset()->set_input_tokens(input);
  w.mutable_dataset()->set_output_tokens(output);
  w.mutable_dataset()->set_seed(1);
  auto prompts = loadgen::BuildPrompts(w.dataset(), n);
  auto planned = loadgen::PlanArrivals(w, n);
  LoadOptions o;
  o.url = url;
  o.concurrency = c;
  o.experiment_id = id;
  o.request_timeout = absl::Minutes(5);
  o.realtime_priority = client_realtime_priority;
  auto runner = LoadRunner::Create(o);
  const std::string path = absl::StrCat(dir, "/", id, ".sqlite");
  auto sink = loadgen::OpenRecordFile(path, spec);
  if (!runner.ok() || !prompts.ok() || !planned.ok() || !sink.ok()) {
    std::cerr << "setup failed\n";
    std::exit(1);
  }
  double cpu0 = SelfCpuSeconds(), kernel0 = SelfKernelCpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  auto summary = (*runner)->Run(*prompts, *planned, **sink);
  RunOutput out;
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.cpu_seconds = SelfCpuSeconds() - cpu0;
  out.kernel_seconds = SelfKernelCpuSeconds() - kernel0;
  sink->reset();
  if (!summary.ok()) {
    std::cerr << "load failed: " << summary.status() << "\n";
    std::exit(1);
  }
  std::cerr << id << ": " << summary->completed << " completed, " << summary->failed << " failed\n";
  auto file = loadgen::ReadRecordFile(path);
  if (!file.ok()) {
    std::cerr << "reading " << path << ": " << file.status() << "\n";
    std::exit(1);
  }
  out.records = std::move(file->records);
  out.summary = *std::move(summary);
  return out;
}

int64_t Chunks(const RunOutput& run) {
  int64_t chunks = 0;
  for (const auto& r : run.records) chunks += r.chunk_ns_size();
  return chunks;
}

// Run A at `streams`: CPU per chunk and TTFT fidelity, and each side's
// busiest second, which says whether a TTFT gap is a core running out.
void StreamsRun(const std::string& url, const std::string& dir, int streams, int output_tokens,
                int sim_pid) {
  const std::string id = absl::StrCat("streams-", streams);
  CpuPeak sim_peak(sim_pid), client_peak(getpid());
  RunOutput a = RunLoad(url, dir, id, 2 * streams, streams, 1000, 64, output_tokens);
  const double sim_busiest = sim_peak.Stop(), client_busiest = client_peak.Stop();
  const int64_t chunks = Chunks(a);
  std::map<std::string, ServerStamp> server = ServerStamps(Fetch(url + "/debug/requests"));
  std::vector<double> diffs;
  std::vector<std::pair<double, GapLegs>> gaps;
  for (const auto& r : a.records) {
    if (r.first_token_ns() == 0 || !r.error().empty()) continue;
    auto it = server.find(loadgen::RequestId(id, r.phase(), r.attempt(), r.request_index()));
    if (it == server.end()) continue;
    diffs.push_back(std::abs((r.first_token_ns() - r.sent_ns()) / 1e9 - it->second.ttft));
    gaps.emplace_back(diffs.back(), LegsOf(r, it->second));
  }
  std::sort(diffs.begin(), diffs.end());
  std::cout << absl::StrFormat(
      "Run A, %d streams: %d requests, 1000/s poisson, %d chunks each, records persisted; "
      "wall %.2f s\n",
      streams, 2 * streams, output_tokens, a.wall_seconds);
  Figure("peak concurrent streams", PeakInFlight(a.records), "streams",
         absl::StrCat(">= ", streams));
  Figure("chunks received", static_cast<double>(chunks), "chunks", "-");
  Figure("client CPU per chunk", a.cpu_seconds / chunks * 1e6, "us", "<= 5 us");
  Figure("  of it in the kernel", a.kernel_seconds / chunks * 1e6, "us", "-");
  Figure("client CPU utilisation", a.cpu_seconds / a.wall_seconds, "cores", "-");
  Figure("TTFT |client - sim| p50", analysis::Percentile(diffs, 50) * 1e3, "ms", "-");
  Figure("TTFT |client - sim| p99", analysis::Percentile(diffs, 99) * 1e3, "ms", "<= 1 ms");
  Figure("TTFT pairs joined", static_cast<double>(diffs.size()), "requests", "-");
  PrintGapLegs(std::move(gaps));
  // Not in the gap: the records' first token is the kernel's stamp.
  Figure("first token read lag (socket -> read) p50",
         absl::ToDoubleMilliseconds(a.summary.first_token_read_lag_p50), "ms", "-");
  Figure("first token read lag p99", absl::ToDoubleMilliseconds(a.summary.first_token_read_lag_p99),
         "ms", "-");
  // Near 1, that side's core is the queue the TTFT gap waits in.
  Figure("busiest second: sim's core", sim_busiest, "cores", "-");
  Figure("busiest second: client's core", client_busiest, "cores", "-");
}

void PrintFloor(const LoopbackFloor& floor, const LoopbackFloorOptions& options) {
  std::cout << absl::StrFormat(
      "Kernel floor, %d loopback connections, one 200-byte chunk each per %s\n",
      options.connections, DescribePacing(options));
  Figure("chunks/s received", floor.received_per_second, "chunks/s", "-");
  Figure("receiver CPU per chunk (floor under client's)", floor.receiver_us_per_chunk, "us", "-");
  Figure("sender CPU per chunk", floor.sender_us_per_chunk, "us", "-");
  Figure("receiver core share", floor.receiver_core_share, "cores", "-");
  Figure("sender core share", floor.sender_core_share, "cores", "-");
}

// The kernel's share of run A's cost: the same connections and pacing with
// nothing but the kernel, one syscall per chunk (as Asio, and so the client,
// pays today) and io_uring (loopback_floor.h). Each round's chunks go out
// all at once, as the sim's shared decode steps make them due, then spread
// over the round as streams each paced on its own timer are, so that a
// receiver wakes for nearly each one. The client's CPU per chunk cannot go
// below the all-at-once receiver's figure of the interface it uses.
void KernelFloor(int streams, double decode_seconds, int client_core, int sim_core) {
  for (const LoopbackFloorOptions& options : FloorVariants({.connections = streams,
                                             .round_seconds = decode_seconds,
                                             .sender_core = sim_core,
                                             .receiver_core = client_core})) {
    LoopbackFloor floor = MeasureLoopbackFloor(options);
    if (floor.ok) PrintFloor(floor, options);
  }
}

// The floor under schedule lag on this machine: how late a thread that
// sleeps until an absolute time wakes, with no work at all (timer slack 1 ns,
// as a timerfd has none). In a VM, waking an idle vCPU is most of it.
void TimerWakeFloor() {
  const unsigned long old_slack = static_cast<unsigned long>(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  std::vector<double> late;
  for (int i = 0; i < 3000; ++i) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t at_ns = now.tv_sec * 1'000'000'000LL + now.tv_nsec + 200'000 + (i % 9) * 100'000;
    const timespec at{.tv_sec = at_ns / 1'000'000'000LL, .tv_nsec = at_ns % 1'000'000'000LL};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr);
    clock_gettime(CLOCK_MONOTONIC, &now);
    late.push_back((now.tv_sec * 1'000'000'000LL + now.tv_nsec - at_ns) / 1e9);
  }
  prctl(PR_SET_TIMERSLACK, old_slack, 0, 0, 0);
  std::sort(late.begin(), late.end());
  std::cout << "Timer wake-up on the client core, no load (the floor under schedule lag)\n";
  Figure("wake-up late p50", analysis::Percentile(late, 50) * 1e6, "us", "-");
  Figure("wake-up late p99", analysis::Percentile(late, 99) * 1e6, "us", "-");
}

// The other floor: how often the client core is taken from a thread that
// never sleeps. A busy loop reads the clock for 3 s; a gap between two reads
// is time the thread did not run (the guest's vCPU taken by the host, a
// kernel thread). A request due in such a gap is late by it, whatever the
// load generator does.
void StallFloor() {
  constexpr double kSeconds = 3;
  const auto start = std::chrono::steady_clock::now();
  auto previous = start;
  int over_100us = 0, over_1ms = 0;
  double longest = 0;
  while (previous - start < std::chrono::duration<double>(kSeconds)) {
    const auto now = std::chrono::steady_clock::now();
    const double gap = std::chrono::duration<double>(now - previous).count();
    over_100us += gap > 100e-6;
    over_1ms += gap > 1e-3;
    longest = std::max(longest, gap);
    previous = now;
  }
  std::cout << "Stalls of a busy thread on the client core, no load, 3 s\n";
  Figure("gaps > 100 us per second", over_100us / kSeconds, "1/s", "-");
  Figure("gaps > 1 ms per second", over_1ms / kSeconds, "1/s", "-");
  Figure("longest gap", longest * 1e6, "us", "-");
}

// Run B at `rate`: schedule lag of 3 s of short requests.
void LagRun(const std::string& url, const std::string& dir, double rate) {
  const int n = static_cast<int>(rate * 3);
  RunOutput b =
      RunLoad(url, dir, absl::StrCat("lag-", static_cast<int>(rate)), n, 2000, rate, 16, 4);
  std::vector<double> lag;
  for (const auto& r : b.records) lag.push_back((r.sent_ns() - r.planned_send_ns()) / 1e9);
  std::sort(lag.begin(), lag.end());
  std::cout << absl::StrFormat("Run B, %.0f/s: %d requests poisson, 4 chunks each\n", rate, n);
  Figure("schedule lag p50", analysis::Percentile(lag, 50) * 1e6, "us", "-");
  Figure("schedule lag p99", analysis::Percentile(lag, 99) * 1e6, "us",
         rate <= 1000 ? "<= 100 us" : "<= 200 us");
  Figure("schedule lag max", lag.empty() ? 0 : lag.back() * 1e6, "us", "-");
  // A timer is late by tens of microseconds; a request this late waited for
  // the whole thread (the guest's vCPU taken away, a page fault storm).
  Figure("requests late by > 1 ms",
         std::count_if(lag.begin(), lag.end(), [](double l) { return l > 1e-3; }), "requests", "-");
}

int Main(int argc, char** argv) {
  std::vector<int> streams = {200, 1000, 2000};
  std::vector<double> rates = {1000, 5000};
  int output_tokens = 150, unpaced_tokens = 1000, client_core = 0, sim_core = 1;
  double decode_seconds = 0.02;
  std::string sim_path;
  CLI::App app{"loadgen_bench: load generator cost and fidelity against servelab-sim"};
  app.add_option("--streams", streams, "Concurrency caps of run A (one run each)")->delimiter(',');
  app.add_option("--rates", rates, "Arrival rates of run B, req/s (one run each)")->delimiter(',');
  app.add_option("--output-tokens", output_tokens, "Chunks per stream in run A");
  app.add_option("--unpaced-tokens", unpaced_tokens, "Chunks per stream in run U");
  app.add_option("--decode-seconds", decode_seconds, "Sim decode step (paces every stream)");
  app.add_option("--client-core", client_core, "Pin this process to a core (-1: no)");
  app.add_option("--sim-core", sim_core, "Pin the sim to a core (-1: no)");
  app.add_option("--sim", sim_path, "servelab-sim binary (default: beside this one)");
  app.add_option("--realtime-priority", client_realtime_priority,
                 "The client's sending thread runs SCHED_FIFO at this priority (0: ordinary)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (absl::Status s = loadgen::CheckRealtimeAllowed(client_realtime_priority); !s.ok()) {
    std::cerr << "--realtime-priority: " << s.message() << "\n";
    return 1;
  }
  if (sim_path.empty()) sim_path = SiblingBinary("servelab-sim");
  const std::string dir = MakeWorkDir("loadgen_bench");
  if (dir.empty()) return 1;
  int history = 2 * *std::max_element(streams.begin(), streams.end()) + 10;
  SimProcess paced, unpaced;
  if (!StartSim(sim_path, WriteStreamingSimConfig(dir, decode_seconds, 0.005, history), sim_core,
                dir, {}, paced)) {
    std::filesystem::remove_all(dir);
    return 1;
  }
  PinTo(client_core);
  std::cout << "loadgen_bench on " << Machine() << "\n"
            << "client pinned to core " << client_core << " (sending thread "
            << (client_realtime_priority > 0 ? absl::StrCat("SCHED_FIFO ", client_realtime_priority)
                                             : std::string("ordinary scheduling"))
            << "), sim to core " << sim_core << "\n";
  const std::string url = absl::StrCat("http://127.0.0.1:", paced.port);
  for (int s : streams) {
    StreamsRun(url, dir, s, output_tokens, paced.pid);
    KernelFloor(s, decode_seconds, client_core, sim_core);
  }
  if (!rates.empty()) {
    TimerWakeFloor();
    StallFloor();
  }
  for (double rate : rates) LagRun(url, dir, rate);
  paced.Stop();

  // No decode time: the sim writes tokens as fast as it can, several events per read.
  if (!StartSim(sim_path, WriteStreamingSimConfig(dir, 0, 0, 1000), sim_core, dir,
                {"--time-scale", "0"}, unpaced)) {
    std::filesystem::remove_all(dir);
    return 1;
  }
  RunOutput u = RunLoad(absl::StrCat("http://127.0.0.1:", unpaced.port), dir, "unpaced", 200, 200,
                        0, 64, unpaced_tokens);
  const int64_t chunks = Chunks(u);
  std::cout << absl::StrFormat("Run U: 200 streams of %d tokens, unpaced; wall %.2f s\n",
                               unpaced_tokens, u.wall_seconds);
  Figure("chunks received", static_cast<double>(chunks), "chunks", "-");
  Figure("chunks per client CPU second", chunks / u.cpu_seconds, "chunks/s", ">= 200,000");
  Figure("chunks/s received (wall)", chunks / u.wall_seconds, "chunks/s", "-");
  unpaced.Stop();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace servelab::bench

int main(int argc, char** argv) { return servelab::bench::Main(argc, argv); }
