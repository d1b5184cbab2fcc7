// DaemonFixture: a real servelabd in a temp state directory, driven through
// the real servelab CLI, plus what the engine tests read off the serving
// instances it launches (their /metrics and the sims' /debug/loads).
//
//   class MyTest : public DaemonFixture {};
//   TEST_F(MyTest, Runs) {
//     StartDaemon({"--sim-time-scale", "0.05"});
//     v1::Experiment e = WaitFinal(Submit({"-f", spec}));
//   }
//
// Serving instances outlive the daemon by design; the fixture kills every
// pid a launch stage reported when the test ends. Single-threaded.
#ifndef SERVELAB_TESTS_WORKFLOW_DAEMON_FIXTURE_H_
#define SERVELAB_TESTS_WORKFLOW_DAEMON_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "servelab/v1/experiment.pb.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab {

class DaemonFixture : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // servelabd --state-dir S --metrics-listen 127.0.0.1:0 FLAGS...; waits for
  // its address file. `env`: NAME=VALUE entries added to its environment.
  void StartDaemon(const std::vector<std::string>& flags, const std::vector<std::string>& env = {});
  // The same for a daemon that may die on purpose before it serves (a crash
  // point hit by the lane, which starts before the address is written):
  // false, without a failure, when it exited first.
  bool StartDaemonThatMayDie(const std::vector<std::string>& flags,
                             const std::vector<std::string>& env);
  void StopDaemon();
  // SIGKILL, as a crash.
  void KillDaemon();

  testing::RunResult Cli(std::vector<std::string> args);
  v1::Experiment Parse(const testing::RunResult& r);
  std::string Submit(const std::vector<std::string>& args);
  v1::Experiment Status(const std::string& id);
  v1::Experiment WaitFinal(const std::string& id);
  // Waits until some formal records of `id`'s first attempt are stored.
  bool WaitForFormalRecords();

  static const v1::Stage& StageOf(const v1::Experiment& e, v1::StageName name);
  // The stage counter as an int; -1 when absent.
  static int Counter(const v1::Experiment& e, v1::StageName name, const std::string& key);
  static bool Alive(int pid);
  // GET on 127.0.0.1:port; the body only.
  static std::string HttpBody(int port, const std::string& path);
  // Sum of every sample of `name` on port's /metrics.
  static double MetricSum(int port, const std::string& name);

  testing::TempDir dir_;
  std::string state_dir_;
  std::string addr_;
  std::unique_ptr<testing::Process> daemon_;
  int metrics_port_ = 0;

 private:
  // Launch stages record the pids of what they started.
  void Remember(const v1::Experiment& e);

  std::vector<std::string> flags_;
  int starts_ = 0;
  std::set<int> pids_;
};

}  // namespace servelab

#endif  // SERVELAB_TESTS_WORKFLOW_DAEMON_FIXTURE_H_
