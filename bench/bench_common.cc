#include "bench/bench_common.h"

#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace servelab::bench {

std::string Machine() {
  utsname u;
  uname(&u);
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown cpu";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  return model + ", " + std::to_string(std::thread::hardware_concurrency()) + " cpus, " +
         u.sysname + " " + u.release;
}

void PinTo(int core) {
  if (core < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  sched_setaffinity(0, sizeof set, &set);
}

long long ProcStatusField(int pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1);
  }
  return -1;
}

double ProcCpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / sysconf(_SC_CLK_TCK);
}

CpuPeak::CpuPeak(int pid) : pid_(pid) {
  thread_ = std::thread([this] {
    const auto start = std::chrono::steady_clock::now();
    while (!stop_.load()) {
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      samples_.emplace_back(wall, ProcCpuSeconds(pid_));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

double CpuPeak::Stop() {
  if (thread_.joinable()) {
    stop_.store(true);
    thread_.join();
  }
  // Ten 100 ms steps make a window of about a second.
  constexpr size_t kSteps = 10;
  double peak = 0;
  for (size_t end = kSteps; end < samples_.size(); ++end) {
    const auto& [wall0, cpu0] = samples_[end - kSteps];
    const auto& [wall1, cpu1] = samples_[end];
    if (wall1 > wall0) peak = std::max(peak, (cpu1 - cpu0) / (wall1 - wall0));
  }
  return peak;
}

double SelfCpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double SelfKernelCpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

std::string MakeWorkDir(const std::string& name) {
  std::string path = "/tmp/" + name + ".XXXXXX";
  if (mkdtemp(path.data()) == nullptr) {
    std::perror("mkdtemp");
    return "";
  }
  return path;
}

std::string SiblingBinary(const std::string& name) {
  return (std::filesystem::canonical("/proc/self/exe").parent_path() / name).string();
}

std::string WriteStreamingSimConfig(const std::string& dir, double decode_seconds,
                                    double prefill_overhead_seconds, int request_history) {
  const std::string path = dir + "/sim.yaml";
  std::ofstream out(path);
  out << "load_time_seconds: 0\ncold_start_requests: 0\nmax_num_seqs: 100000\n"
      << "num_gpu_blocks: 100000000\nprefill_overhead_seconds: " << prefill_overhead_seconds
      << "\nprefill_chunk_overhead_seconds: 0\nprefill_seconds_per_token: 0\n"
      << "decode_base_seconds: " << decode_seconds << "\ndecode_seconds_per_seq: 0\n"
      << "debug_request_history: " << request_history << "\n";
  return path;
}

void SimProcess::Stop() {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  pid = 0;
}

bool StartSim(const std::string& sim_path, const std::string& config, int core,
              const std::string& dir, const std::vector<std::string>& extra_args, SimProcess& sim) {
  static int started = 0;
  const std::string port_file = dir + "/port-" + std::to_string(++started);
  std::vector<std::string> args = {sim_path,  "--port",      "0",   "--port-file",
                                   port_file, "--threads",   "1",   "--config",
                                   config,    "--log-level", "warn"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  const pid_t pid = fork();
  if (pid == 0) {
    PinTo(core);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(sim_path.c_str(), argv.data());
    _exit(127);
  }
  sim.pid = pid;
  for (int i = 0; i < 1000 && sim.port == 0; ++i) {
    std::ifstream in(port_file);
    if (!(in >> sim.port)) sim.port = 0;
    if (sim.port == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // start-up
  }
  if (sim.port == 0) {
    std::fprintf(stderr, "%s did not start\n", sim_path.c_str());
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    sim.pid = 0;
    return false;
  }
  return true;
}

}  // namespace servelab::bench
