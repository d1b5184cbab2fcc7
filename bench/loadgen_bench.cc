// loadgen_bench: what the load generator itself costs and how faithfully it
// measures, against a servelab-sim on the same machine. Prints each figure
// beside its target (issue 4). A program that prints figures, not a test.
//
//   build-loadgen/bin/loadgen_bench [--streams 2000] [--requests 4000]
//       [--rate 1000] [--output-tokens 150] [--decode-seconds 0.02]
//       [--client-core 0] [--sim-core 1]
//
// Run A (streams): poisson arrivals at --rate up to --streams in flight, each
//   stream --output-tokens chunks paced by the sim's decode step. Figures:
//   peak concurrent streams, client CPU seconds per 1,000 chunks (process
//   CPU: network thread + record writer) and the chunks/s that implies on one
//   core, plus TTFT fidelity: client TTFT minus the sim's own server-side TTFT
//   (/debug/requests, joined by x-request-id).
// Run B (lag): 1,000 req/s poisson of short requests; schedule lag =
//   sent - planned.
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
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
#include "loadgen/dataset.h"
#include "loadgen/load_runner.h"
#include "loadgen/schedule.h"

namespace servelab::bench {
namespace {

using loadgen::LoadOptions;
using loadgen::LoadRunner;
using loadgen::MemorySink;

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

// request_id -> server-side TTFT seconds, from the sim's /debug/requests.
std::map<std::string, double> ServerTtfts(const std::string& json) {
  std::map<std::string, double> out;
  size_t at = 0;
  while ((at = json.find("\"request_id\":\"", at)) != std::string::npos) {
    at += 14;
    size_t end = json.find('"', at);
    std::string id = json.substr(at, end - at);
    size_t t = json.find("\"ttft_seconds\":", end);
    if (t == std::string::npos) break;
    t += 15;
    if (json.compare(t, 4, "null") != 0) out[id] = std::atof(json.c_str() + t);
    at = t;
  }
  return out;
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

void Figure(const std::string& name, double value, const std::string& unit,
            const std::string& target) {
  std::cout << absl::StrFormat("  %-48s %12.4f %-10s target: %s\n", name, value, unit, target);
}

struct RunOutput {
  std::vector<v1::RequestRecord> records;
  double cpu_seconds = 0;
  double wall_seconds = 0;
};

RunOutput RunLoad(const std::string& url, const std::string& id, int n, int c, double rate,
                  int input, int output) {
  v1::WorkloadSpec w;
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
  auto runner = LoadRunner::Create(o);
  if (!runner.ok() || !prompts.ok() || !planned.ok()) {
    std::cerr << "setup failed\n";
    std::exit(1);
  }
  MemorySink sink;
  double cpu0 = SelfCpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  auto summary = (*runner)->Run(*prompts, *planned, sink);
  RunOutput out;
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.cpu_seconds = SelfCpuSeconds() - cpu0;
  if (!summary.ok()) {
    std::cerr << "load failed: " << summary.status() << "\n";
    std::exit(1);
  }
  std::cerr << id << ": " << summary->completed << " completed, " << summary->failed << " failed\n";
  out.records = sink.records();
  return out;
}

int Main(int argc, char** argv) {
  int streams = 2000, requests = 4000, output_tokens = 150, client_core = 0, sim_core = 1;
  double rate = 1000, decode_seconds = 0.02;
  std::string sim_path;
  CLI::App app{"loadgen_bench: load generator cost and fidelity against servelab-sim"};
  app.add_option("--streams", streams, "Concurrency cap of run A");
  app.add_option("--requests", requests, "Requests of run A");
  app.add_option("--rate", rate, "Arrival rate of both runs, req/s");
  app.add_option("--output-tokens", output_tokens, "Chunks per stream in run A");
  app.add_option("--decode-seconds", decode_seconds, "Sim decode step (paces every stream)");
  app.add_option("--client-core", client_core, "Pin this process to a core (-1: no)");
  app.add_option("--sim-core", sim_core, "Pin the sim to a core (-1: no)");
  app.add_option("--sim", sim_path, "servelab-sim binary (default: beside this one)");
  CLI11_PARSE(app, argc, argv);
  if (sim_path.empty()) sim_path = SiblingBinary("servelab-sim");
  const std::string dir = MakeWorkDir("loadgen_bench");
  if (dir.empty()) return 1;
  std::string port_file = dir + "/port";
  std::string config = WriteStreamingSimConfig(dir, decode_seconds, 0.005, requests + 10);

  pid_t sim = fork();
  if (sim == 0) {
    PinTo(sim_core);
    execl(sim_path.c_str(), sim_path.c_str(), "--port", "0", "--port-file", port_file.c_str(),
          "--threads", "1", "--config", config.c_str(), "--log-level", "warn",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int port = 0;
  for (int i = 0; i < 1000 && port == 0; ++i) {
    std::ifstream in(port_file);
    if (!(in >> port)) port = 0;
    if (port == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // process start-up
  }
  if (port == 0) {
    std::cerr << "sim did not start\n";
    kill(sim, SIGKILL);
    return 1;
  }
  PinTo(client_core);
  std::string url = absl::StrCat("http://127.0.0.1:", port);

  std::cout << "loadgen_bench on " << Machine() << "\n"
            << "client pinned to core " << client_core << ", sim to core " << sim_core << "\n";

  RunOutput a = RunLoad(url, "streams", requests, streams, rate, 64, output_tokens);
  int64_t chunks = 0;
  for (const auto& r : a.records) chunks += r.chunk_ns_size();
  std::map<std::string, double> server = ServerTtfts(Fetch(url + "/debug/requests"));
  std::vector<double> diffs;
  for (const auto& r : a.records) {
    if (r.first_token_ns() == 0 || !r.error().empty()) continue;
    auto it = server.find(loadgen::RequestId("streams", r.phase(), r.attempt(), r.request_index()));
    if (it == server.end()) continue;
    diffs.push_back(std::abs((r.first_token_ns() - r.sent_ns()) / 1e9 - it->second));
  }
  std::sort(diffs.begin(), diffs.end());
  std::cout << absl::StrFormat(
      "Run A: %d requests, rate %.0f/s poisson, cap %d, %d chunks each; wall %.2f s\n", requests,
      rate, streams, output_tokens, a.wall_seconds);
  Figure("peak concurrent streams", PeakInFlight(a.records), "streams", ">= 2000");
  Figure("chunks received", static_cast<double>(chunks), "chunks", "-");
  Figure("chunks/s received (wall)", chunks / a.wall_seconds, "chunks/s", "-");
  Figure("client CPU per 1,000 chunks", a.cpu_seconds / (chunks / 1000.0), "s", "report");
  Figure("max chunks/s on one core (1 / CPU per chunk)", chunks / a.cpu_seconds, "chunks/s",
         "report");
  Figure("client CPU utilisation during run A", a.cpu_seconds / a.wall_seconds, "cores", "-");
  Figure("TTFT |client - sim| p50", analysis::Percentile(diffs, 50) * 1e3, "ms", "-");
  Figure("TTFT |client - sim| p99", analysis::Percentile(diffs, 99) * 1e3, "ms", "<= 1 ms");
  Figure("TTFT pairs joined", static_cast<double>(diffs.size()), "requests", "-");

  RunOutput b = RunLoad(url, "lag", 3000, streams, 1000, 16, 4);
  std::vector<double> lag;
  for (const auto& r : b.records) lag.push_back((r.sent_ns() - r.planned_send_ns()) / 1e9);
  std::sort(lag.begin(), lag.end());
  std::cout << "Run B: 3000 requests, 1000/s poisson, 4 chunks each\n";
  Figure("schedule lag p50", analysis::Percentile(lag, 50) * 1e6, "us", "-");
  Figure("schedule lag p99", analysis::Percentile(lag, 99) * 1e6, "us", "<= 100 us");
  Figure("schedule lag max", lag.empty() ? 0 : lag.back() * 1e6, "us", "-");

  kill(sim, SIGTERM);
  waitpid(sim, nullptr, 0);
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace servelab::bench

int main(int argc, char** argv) { return servelab::bench::Main(argc, argv); }
