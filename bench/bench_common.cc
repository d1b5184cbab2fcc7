#include "bench/bench_common.h"

#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
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

double SelfCpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
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
