// RunnerMetrics: what the stage runner reports for /metrics, as an interface
// so the core stays free of the metrics library. The daemon implements it
// with prometheus-cpp (daemon/service/metrics.h); tests use NullRunnerMetrics
// or a recording fake.
#ifndef SERVELAB_DAEMON_CORE_RUNNER_METRICS_H_
#define SERVELAB_DAEMON_CORE_RUNNER_METRICS_H_

#include <cstdint>
#include <string>

namespace servelab::core {

class RunnerMetrics {
 public:
  virtual ~RunnerMetrics() = default;
  // stage and action as labels ("formal_load", "run" / "reuse" / "skip").
  virtual void ObserveStage(const std::string& stage, const std::string& action,
                            double seconds) = 0;
  virtual void ObserveTimeToFirstFormalRequest(double seconds) = 0;
  virtual void ObserveQueueWait(double seconds) = 0;
  virtual void SetLaneBusy(bool busy) = 0;
  // outcome: "sent", "completed", "failed".
  virtual void CountFormalRequests(const std::string& outcome, int64_t n) = 0;
  virtual void CountInstanceLaunch(const std::string& side) = 0;
  virtual void CountStageReuse(const std::string& stage) = 0;
};

class NullRunnerMetrics : public RunnerMetrics {
 public:
  void ObserveStage(const std::string&, const std::string&, double) override {}
  void ObserveTimeToFirstFormalRequest(double) override {}
  void ObserveQueueWait(double) override {}
  void SetLaneBusy(bool) override {}
  void CountFormalRequests(const std::string&, int64_t) override {}
  void CountInstanceLaunch(const std::string&) override {}
  void CountStageReuse(const std::string&) override {}
};

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_RUNNER_METRICS_H_
