// What every benchmark needs around its measurement: where it runs (printed
// beside each figure), pinning to a core, its own CPU time, the binaries
// built beside it, and a servelab-sim config whose only cost is decoding.
// Plain C++ (no abseil): sim_bench links nothing but Boost.
#ifndef SERVELAB_BENCH_BENCH_COMMON_H_
#define SERVELAB_BENCH_BENCH_COMMON_H_

#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace servelab::bench {

// "CPU model, N cpus, Linux 6.1.0".
std::string Machine();

// Pins the calling process to `core`; a negative core leaves it free.
void PinTo(int core);

// A field of /proc/PID/status ("VmRSS", "VmHWM", "Threads") as its number
// (KiB for the Vm* fields); -1 when the process or the field is gone.
long long ProcStatusField(int pid, const std::string& field);

// User + system CPU seconds of process `pid` so far (/proc/PID/stat).
double ProcCpuSeconds(int pid);
// User + system CPU seconds of this process so far.
double SelfCpuSeconds();
// System CPU seconds of this process so far: its part in the kernel.
double SelfKernelCpuSeconds();

// The busiest second of a process over a run: its CPU time sampled every
// 100 ms on a thread of its own, and the highest share of one core over any
// 1 s window. An average over the whole run hides a saturated core behind
// the ramp up and down.
//   CpuPeak sim_peak(sim.pid);  ...run...;  double busiest = sim_peak.Stop();
class CpuPeak {
 public:
  explicit CpuPeak(int pid);
  ~CpuPeak() { Stop(); }
  CpuPeak(const CpuPeak&) = delete;
  CpuPeak& operator=(const CpuPeak&) = delete;
  // Ends the sampling (once); the peak share, 0 if the run was under 1 s.
  double Stop();

 private:
  int pid_;
  std::atomic<bool> stop_{false};
  std::vector<std::pair<double, double>> samples_;  // (wall s, CPU s)
  std::thread thread_;
};

// A fresh directory /tmp/NAME.XXXXXX for the benchmark's files; empty (after
// printing why) when it cannot be made.
std::string MakeWorkDir(const std::string& name);

// The executable `name` in this benchmark's own directory (build/bin).
std::string SiblingBinary(const std::string& name);

// Writes DIR/sim.yaml: no load time, no cold start, unbounded capacity,
// `prefill_overhead_seconds` of prefill and `decode_seconds` per token, so
// that the sim's cost is streaming alone. Returns its path.
std::string WriteStreamingSimConfig(const std::string& dir, double decode_seconds,
                                    double prefill_overhead_seconds, int request_history);

// A servelab-sim started for a benchmark: `--port 0 --threads 1 --config
// CONFIG --log-level warn` plus `extra_args`, pinned to `core` (-1: free),
// its port read from DIR/port-N. pid 0 (after printing why) when it did not
// start. Stop() ends it (SIGTERM, then waits); so does the destructor.
struct SimProcess {
  int pid = 0;
  int port = 0;
  void Stop();
  ~SimProcess() { Stop(); }
};
bool StartSim(const std::string& sim_path, const std::string& config, int core,
              const std::string& dir, const std::vector<std::string>& extra_args, SimProcess& sim);

}  // namespace servelab::bench

#endif  // SERVELAB_BENCH_BENCH_COMMON_H_
