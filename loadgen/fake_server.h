// FakeServer: a tiny OpenAI-compatible streaming server for runner tests —
// plain sockets, one thread per connection, port 0 on 127.0.0.1. It counts
// what it saw (connections, requests, peak in-flight, request heads) and can
// misbehave on demand (5xx, dropped stream, hang before or after the first
// token, missing [DONE]) or end a
// body by closing.
//
// Thread-safe.
#ifndef SERVELAB_LOADGEN_FAKE_SERVER_H_
#define SERVELAB_LOADGEN_FAKE_SERVER_H_

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace servelab::loadgen {

class FakeServer {
 public:
  // kUntilClose streams a body that ends with the connection (no length);
  // kHangAfterFirstToken sends one token, then nothing.
  enum class Mode {
    kStream,
    kHttp500,
    kDropMidStream,
    kHang,
    kHangAfterFirstToken,
    kNoDone,
    kUntilClose
  };

  FakeServer();
  ~FakeServer();

  std::string url() const;
  int port() const { return port_; }

  void set_mode(Mode mode);
  // Gap between streamed tokens.
  void set_token_gap(absl::Duration gap);
  // Report this many cached tokens in usage.
  void set_cached_tokens(int cached);

  int connections() const { return connections_.load(); }
  int requests() const { return requests_.load(); }
  int max_in_flight() const { return max_in_flight_.load(); }
  // GET /v1/models asked so far.
  int model_lookups() const { return model_lookups_.load(); }
  std::vector<std::string> heads() const;
  std::vector<std::string> bodies() const;

 private:
  void AcceptLoop();
  void Serve(int fd);
  bool Stopping() const { return stopping_.load(); }

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0}, requests_{0}, in_flight_{0}, max_in_flight_{0},
      model_lookups_{0};
  std::thread acceptor_;

  mutable absl::Mutex mu_;
  Mode mode_ ABSL_GUARDED_BY(mu_) = Mode::kStream;
  absl::Duration token_gap_ ABSL_GUARDED_BY(mu_) = absl::Milliseconds(1);
  int cached_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> heads_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> bodies_ ABSL_GUARDED_BY(mu_);
};

}  // namespace servelab::loadgen

#endif  // SERVELAB_LOADGEN_FAKE_SERVER_H_
