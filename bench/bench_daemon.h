// What the benchmarks that drive a real servelabd share: the daemon as a child
// process on a temp state dir, waiting for an experiment to end, and stopping
// the serving processes it launched.
#ifndef SERVELAB_BENCH_BENCH_DAEMON_H_
#define SERVELAB_BENCH_BENCH_DAEMON_H_

#include <sys/types.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "servelab/v1/service.grpc.pb.h"

namespace servelab::bench {

std::string ReadFile(const std::string& path);
absl::Time FromProto(const google::protobuf::Timestamp& t);
double Ms(absl::Duration d);
bool IsFinal(v1::ExperimentState s);
// Polls every 5 ms; false if `done` never held within `timeout`.
bool WaitUntil(const std::function<bool()>& done, absl::Duration timeout);
// Nearest rank on a sorted copy; NAN when empty.
double Percentile(std::vector<double> v, double q);
// The arithmetic mean; NAN when empty.
double Mean(const std::vector<double>& v);

// servelabd as a child process on WORK_DIR/state, its output in
// WORK_DIR/servelabd.log, serving sims from bin_dir.
class Daemon {
 public:
  Daemon(const std::string& bin_dir, const std::string& work_dir, double time_scale,
         std::vector<std::string> extra_args = {});
  ~Daemon() { Stop(); }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // The gRPC target, once the daemon wrote its address; empty, after printing
  // its log to stderr, if it died or timed out.
  std::string WaitForAddress();
  bool Running();
  // SIGTERM, then SIGKILL if it has not exited within 15 s.
  void Stop();
  pid_t pid() const { return pid_; }
  const std::string& state_dir() const { return state_dir_; }
  const std::string& log_path() const { return log_path_; }
  // How it ended, for error messages.
  std::string ExitText();

 private:
  std::string state_dir_;
  std::string log_path_;
  pid_t pid_ = -1;
  int exit_status_ = -1;
};

std::unique_ptr<v1::ServeLab::Stub> Connect(const std::string& target);

// Waits on WatchExperiment until the experiment is final, then re-reads it
// into `out`. False on an RPC error or a timeout.
bool WaitFinal(v1::ServeLab::Stub& stub, const std::string& id, v1::Experiment* out);

// Pids of the serving processes recorded in the launch stages.
void CollectInstancePids(const v1::Experiment& e, std::set<pid_t>* pids);

// Stops those that still are servelab-sim (a pid may have been reused).
void KillInstances(const std::set<pid_t>& pids);

}  // namespace servelab::bench

#endif  // SERVELAB_BENCH_BENCH_DAEMON_H_
