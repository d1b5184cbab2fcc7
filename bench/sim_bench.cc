// sim_bench: how many SSE chunks per second one servelab-sim process serves,
// pinned to one core, to ≥2,000 concurrent streaming requests. Prints
// chunks/s, sim CPU seconds per 1,000 chunks, the sim's peak RSS and the
// machine. A program that prints figures, not a test.
//
//   build/bin/sim_bench [--streams 2000] [--seconds 10] [--max-tokens 256]
//                       [--time-scale 0] [--decode-seconds 0.01] [--sim-core 0]
//
// --decode-seconds 0.0075 puts more than 250,000 chunks/s due, so that
// issue 9's P6 target (>= 250,000 paced chunks/s on one core) can be read.
// --time-scale 0 makes modelled time zero (tokens are all due at once, so the
// sim may coalesce overdue chunks into one write); --time-scale 1 with
// --decode-seconds 0.01 paces every stream at 100 tokens/s, one write per
// token, which is the per-chunk cost a load generator actually sees. Then the
// kernel floor at the same connections and pacing (loopback_floor.h).
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_common.h"
#include "bench/loopback_floor.h"
#include "sim/asio.h"

namespace servelab::bench {
namespace {

using sim::tcp;
using sim::asio::awaitable;
namespace asio = sim::asio;
using Clock = std::chrono::steady_clock;

struct Counters {
  uint64_t data_events = 0;  // every `data: ` SSE event
  uint64_t requests = 0;
  uint64_t errors = 0;
  bool measuring = false;
  uint64_t measured_events = 0;
  uint64_t measured_requests = 0;
};

std::string MakeRequest(int max_tokens, int id) {
  std::string prompt = "[";
  for (int i = 0; i < 64; ++i)
    prompt += std::to_string((id * 64 + i) % 50000) + (i < 63 ? "," : "]");
  std::string body =
      "{\"prompt\":" + prompt + ",\"max_tokens\":" + std::to_string(max_tokens) +
      ",\"min_tokens\":" + std::to_string(max_tokens) +
      ",\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
  return "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// One keep-alive connection issuing streaming requests back to back until stop.
awaitable<void> Stream(tcp::endpoint endpoint, std::string request, Counters& counters,
                       const bool& stop) {
  tcp::socket socket(co_await asio::this_coro::executor);
  boost::system::error_code ec;
  co_await socket.async_connect(endpoint, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    ++counters.errors;
    co_return;
  }
  socket.set_option(tcp::no_delay(true));
  static constexpr std::string_view kData = "data: ";
  static constexpr std::string_view kEnd = "data: [DONE]\n\n\r\n0\r\n\r\n";
  std::string buf;
  std::vector<char> chunk(64 * 1024);
  while (!stop) {
    co_await asio::async_write(socket, asio::buffer(request),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    buf.clear();
    size_t scan = 0;
    bool done = false;
    while (!done) {
      size_t n = co_await socket.async_read_some(asio::buffer(chunk),
                                                 asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      buf.append(chunk.data(), n);
      size_t p;
      while ((p = buf.find(kData, scan)) != std::string::npos) {
        ++counters.data_events;
        if (counters.measuring) ++counters.measured_events;
        scan = p + kData.size();
      }
      if (buf.find(kEnd, scan >= kEnd.size() ? scan - kEnd.size() : 0) != std::string::npos) {
        done = true;
      }
      // Keep only a tail that may hold a partial pattern.
      size_t keep_from = buf.size() > kEnd.size() ? buf.size() - kEnd.size() : 0;
      keep_from = std::min(keep_from, scan);
      buf.erase(0, keep_from);
      scan -= keep_from;
    }
    if (!done) {
      ++counters.errors;
      break;
    }
    ++counters.requests;
    if (counters.measuring) ++counters.measured_requests;
  }
}

void PrintKernelFloor(const LoopbackFloor& floor, const LoopbackFloorOptions& options) {
  if (!floor.ok) return;
  printf("kernel floor (%d loopback connections, one 200-byte chunk each per %s):\n",
         options.connections, DescribePacing(options).c_str());
  printf("  sender: %.2f us CPU per chunk, %.2f of its core, %.0f chunks/s sent\n",
         floor.sender_us_per_chunk, floor.sender_core_share, floor.sent_per_second);
  printf("  so one core sends at most %.0f chunks/s this way\n",
         floor.sender_us_per_chunk > 0 ? 1e6 / floor.sender_us_per_chunk : 0);
  printf("  receiver: %.2f us CPU per chunk, %.2f of its core\n", floor.receiver_us_per_chunk,
         floor.receiver_core_share);
}

// Issue 9, P6: one core serves >= 250,000 paced token chunks/s. Readable
// only when more than that is due (--decode-seconds 0.0075 at 2,000
// streams: 267,000/s); a sim that keeps up serves nearly all of it.
void PrintPacedTarget(double served, int streams, double round) {
  constexpr double kTarget = 250'000;
  if (round <= 0) return;
  const double due = streams / round;
  printf("tokens due per s:                %.0f (served %.1f %% of it)\n", due, 100 * served / due);
  if (due <= kTarget) {
    printf("  target >= 250,000 paced chunks/s: not readable here, fewer are due\n");
    return;
  }
  printf("  target >= 250,000 paced chunks/s: %s\n", served >= kTarget ? "MET" : "MISSED");
}

}  // namespace
}  // namespace servelab::bench

int main(int argc, char** argv) {
  using namespace servelab::bench;
  CLI::App app{"servelab-sim streaming throughput benchmark"};
  int streams = 2000, max_tokens = 256, sim_core = 0, client_core = 1;
  double seconds = 10, warmup_seconds = 2, time_scale = 0, decode_seconds = 0.01;
  std::string sim_path;
  app.add_option("--streams", streams, "concurrent streaming connections")->capture_default_str();
  app.add_option("--seconds", seconds, "measured window")->capture_default_str();
  app.add_option("--warmup-seconds", warmup_seconds, "unmeasured ramp-up")->capture_default_str();
  app.add_option("--max-tokens", max_tokens, "tokens per request")->capture_default_str();
  app.add_option("--time-scale", time_scale, "sim --time-scale")->capture_default_str();
  app.add_option("--decode-seconds", decode_seconds, "modelled inter-token time")
      ->capture_default_str();
  app.add_option("--sim-core", sim_core, "core the sim is pinned to")->capture_default_str();
  app.add_option("--client-core", client_core, "core the client is pinned to (-1 = any)")
      ->capture_default_str();
  app.add_option("--sim", sim_path, "servelab-sim binary (default: beside this one)");
  CLI11_PARSE(app, argc, argv);
  if (sim_path.empty()) sim_path = SiblingBinary("servelab-sim");

  const std::string dir = MakeWorkDir("sim_bench");
  if (dir.empty()) return 1;
  std::string config = WriteStreamingSimConfig(dir, decode_seconds, 0, 1000);
  SimProcess sim_process;
  if (!StartSim(sim_path, config, sim_core, dir, {"--time-scale", std::to_string(time_scale)},
                sim_process)) {
    std::filesystem::remove_all(dir);
    return 1;
  }
  const pid_t sim = sim_process.pid;
  const int port = sim_process.port;
  if (client_core >= 0 && client_core != sim_core) PinTo(client_core);

  asio::io_context io(1);
  Counters counters;
  bool stop = false;
  tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port));
  for (int i = 0; i < streams; ++i) {
    asio::co_spawn(io, Stream(endpoint, MakeRequest(max_tokens, i), counters, stop),
                   asio::detached);
  }
  double cpu_start = 0, cpu_end = 0;
  Clock::time_point t_start, t_end;
  asio::steady_timer timer(io);
  timer.expires_after(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warmup_seconds)));
  timer.async_wait([&](boost::system::error_code) {
    counters.measuring = true;
    cpu_start = ProcCpuSeconds(sim);
    t_start = Clock::now();
    timer.expires_after(
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
    timer.async_wait([&](boost::system::error_code) {
      counters.measuring = false;
      cpu_end = ProcCpuSeconds(sim);
      t_end = Clock::now();
      stop = true;
      io.stop();
    });
  });
  io.run();
  const long long peak_rss_kib = ProcStatusField(sim, "VmHWM");
  const long long sim_threads = ProcStatusField(sim, "Threads");
  sim_process.Stop();
  std::filesystem::remove_all(dir);

  double wall = std::chrono::duration<double>(t_end - t_start).count();
  double chunks = static_cast<double>(counters.measured_events);
  double token_chunks = chunks - 2.0 * counters.measured_requests;  // minus usage + [DONE]
  double cpu = cpu_end - cpu_start;
  printf("machine: %s\n", Machine().c_str());
  printf(
      "setup: sim pinned to core %d (%lld threads), client on core %d, %d concurrent streams, "
      "%d tokens/request, time-scale %g, decode %g s/token\n",
      sim_core, sim_threads, client_core, streams, max_tokens, time_scale, decode_seconds);
  printf("window: %.2f s, requests completed %llu, errors %llu\n", wall,
         static_cast<unsigned long long>(counters.measured_requests),
         static_cast<unsigned long long>(counters.errors));
  printf("SSE chunks/s (all data: events): %.0f\n", chunks / wall);
  printf("token chunks/s:                  %.0f\n", token_chunks / wall);
  const double round = time_scale * decode_seconds;
  PrintPacedTarget(token_chunks / wall, streams, round);
  printf("sim CPU: %.2f s over the window (%.0f%% of one core), %.4f CPU s per 1,000 chunks\n", cpu,
         100 * cpu / wall, chunks > 0 ? 1000 * cpu / chunks : 0);
  printf("sim peak memory (VmHWM): %lld kB\n", peak_rss_kib);
  // The same connections and pacing with nothing but the kernel: what it
  // alone costs per chunk on the sim's core, with one syscall per chunk (as
  // the sim pays today, through Asio) and with io_uring (loopback_floor.h);
  // each round's chunks all at once, as the sim's shared decode steps make
  // them due, then spread over the round as streams each paced on its own
  // timer are, where the sender wakes for a few chunks at a time.
  for (const LoopbackFloorOptions& options : FloorVariants({.connections = streams,
                                             .round_seconds = round,
                                             .sender_core = sim_core,
                                             .receiver_core = client_core})) {
    PrintKernelFloor(MeasureLoopbackFloor(options), options);
  }
  return counters.errors > 0 ? 1 : 0;
}
