// Test harness for servelab-sim black-box tests: starts the real binary on a
// free port (--port 0 --port-file), and a small blocking HTTP/1.1 client
// (one connection per call, chunked decoding, tolerant of truncated streams).
//
//   SimProcess sim({"--role", "unified", "--time-scale", "0.01"});
//   ASSERT_TRUE(sim.WaitHealthy());
//   HttpResponse r = Post(sim.port(), "/v1/completions", R"({"prompt":"a b"})");
#ifndef SERVELAB_TESTS_SIM_SIM_HARNESS_H_
#define SERVELAB_TESTS_SIM_SIM_HARNESS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::sim::testing {

struct HttpResponse {
  bool connected = false;  // false: connect failed (refused)
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // de-chunked
  bool complete = false;                       // the whole message arrived (not truncated)
};

HttpResponse Http(int port, const std::string& method, const std::string& path,
                  const std::string& body = "",
                  const std::vector<std::pair<std::string, std::string>>& headers = {},
                  absl::Duration timeout = absl::Seconds(20));
// How RawHttp paces its side: a request sent in two parts with a pause
// between (the sim must stamp arrival at the first byte), or answers read
// late through a small window (the sim's writes find its send buffer full).
struct RawPacing {
  size_t split_at = 0;  // > 0: send data[0, split_at), pause, then the rest
  absl::Duration pause = absl::ZeroDuration();
  int receive_buffer_bytes = 0;  // SO_RCVBUF before connect; 0: the default
  absl::Duration wait_before_reading = absl::ZeroDuration();
};
// Sends `data` as it is (a whole request, well-formed or not) and reads
// the answer until the sim closes the connection or `timeout` passes;
// `half_close` ends the sending side first, as a client that gave up would.
HttpResponse RawHttp(int port, const std::string& data, absl::Duration timeout = absl::Seconds(20),
                     bool half_close = false, const RawPacing& pacing = {});
inline HttpResponse Post(int port, const std::string& path, const std::string& body,
                         const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  return Http(port, "POST", path, body, headers);
}
inline HttpResponse Get(int port, const std::string& path) { return Http(port, "GET", path); }

// The `data: ` payloads of an SSE body, in order.
std::vector<std::string> SseData(const std::string& body);

// Sum of all series of metric `name` (exact name, any labels) in /metrics;
// -1 when the scrape fails.
double Metric(int port, const std::string& name);

class SimProcess {
 public:
  // Extra flags after the harness's --port 0 --port-file.
  explicit SimProcess(std::vector<std::string> flags);
  // Writes `yaml` to a file and passes it as --config; `env` ("K=V") is
  // added to the process environment.
  SimProcess(std::vector<std::string> flags, const std::string& yaml,
             std::vector<std::string> env = {});

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool started() const { return port_ > 0; }
  bool WaitHealthy(absl::Duration timeout = absl::Seconds(10));
  servelab::testing::Process& process() { return *process_; }

 private:
  void Start(std::vector<std::string> flags, const std::vector<std::string>& env = {});

  servelab::testing::TempDir dir_;
  std::unique_ptr<servelab::testing::Process> process_;
  int port_ = 0;
};

}  // namespace servelab::sim::testing

#endif  // SERVELAB_TESTS_SIM_SIM_HARNESS_H_
