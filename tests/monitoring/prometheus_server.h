// PrometheusServer: the real Prometheus (Debian's /usr/bin/prometheus) for a
// test, with its own config and TSDB in a temp directory, listening on a
// free 127.0.0.1 port and scraping loopback targets (HTTP, or HTTPS with a
// CA) every second. Queries go
// through its HTTP API (/api/v1/query), as Grafana's do.
//
//   auto prometheus = PrometheusServer::Start(
//       {{.job = "servelabd", .port = metrics_port}}, dir.File("prometheus"));
//   ASSERT_THAT(prometheus, IsOk());
//   auto up = (*prometheus)->Query("up");
//
// The destructor stops the server (SIGTERM, then SIGKILL of its process
// group) and waits for it, so no process outlives the test. Single-threaded.
#ifndef SERVELAB_TESTS_MONITORING_PROMETHEUS_SERVER_H_
#define SERVELAB_TESTS_MONITORING_PROMETHEUS_SERVER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/struct.pb.h"
#include "tests/testing/subprocess.h"

namespace servelab::testing {

inline constexpr char kPrometheus[] = "/usr/bin/prometheus";

struct ScrapeTarget {
  std::string job;
  int port = 0;  // On 127.0.0.1.
  // Extra target labels, e.g. {"side", "decode"}.
  std::map<std::string, std::string> labels;
  // Scraped over HTTPS, trusting this CA, when set (per job: the first
  // target of a job decides).
  std::string ca_file;
};

// One element of an instant vector.
struct PromSample {
  std::map<std::string, std::string> labels;  // Includes __name__ when kept.
  double value = 0;
};

class PrometheusServer {
 public:
  // Writes the config under `dir` (created if missing) and starts Prometheus;
  // returns once /-/ready answers 200. UNAVAILABLE, with Prometheus's log,
  // when it does not get ready within `timeout`.
  static absl::StatusOr<std::unique_ptr<PrometheusServer>> Start(
      const std::vector<ScrapeTarget>& targets, const std::string& dir,
      absl::Duration timeout = absl::Seconds(60));
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  int port() const { return port_; }
  // Prometheus's own log (stderr), for failure messages.
  std::string Log() const;

  // GET /api/v1/query. `at` empty: now. An error status (bad PromQL, a
  // result that is not a vector) is INVALID_ARGUMENT with Prometheus's text.
  absl::StatusOr<std::vector<PromSample>> Query(const std::string& promql,
                                                absl::Time at = absl::InfinitePast()) const;
  // Polls Query(promql) until `done` holds for the result or `timeout`
  // passes; the last result (or error) either way.
  absl::StatusOr<std::vector<PromSample>> QueryUntil(
      const std::string& promql, const std::function<bool(const std::vector<PromSample>&)>& done,
      absl::Duration timeout = absl::Seconds(60)) const;
  // The type Prometheus recorded for `metric` from the scrapes' # TYPE lines
  // (GET /api/v1/metadata): "counter", "gauge", "histogram", "unknown"...;
  // NOT_FOUND when it has no metadata for that name.
  absl::StatusOr<std::string> MetricType(const std::string& metric) const;

 private:
  PrometheusServer(std::unique_ptr<Process> process, int port, std::string log_prefix)
      : process_(std::move(process)), port_(port), log_prefix_(std::move(log_prefix)) {}
  // GET `path`; the "data" of a "success" answer, else Prometheus's error
  // about `what`.
  absl::StatusOr<google::protobuf::Struct> Api(const std::string& path,
                                               const std::string& what) const;

  std::unique_ptr<Process> process_;
  int port_;
  std::string log_prefix_;
};

// The value of a one-element vector; NaN when the vector is empty or longer.
double OnlyValue(const std::vector<PromSample>& samples);

}  // namespace servelab::testing

#endif  // SERVELAB_TESTS_MONITORING_PROMETHEUS_SERVER_H_
