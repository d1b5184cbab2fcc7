// LoadRunner: sends one load (N prompts on a planned schedule, at most C in
// flight) to an OpenAI-compatible server and writes a raw record per request
// to a RecordSink. The daemon's formal load, warmup and cache seeding and the
// servelab-load tool all run through it.
//
//   LoadOptions options;
//   options.url = "http://127.0.0.1:8000";
//   options.concurrency = 64;
//   options.experiment_id = "exp-3";
//   options.phase = v1::PHASE_FORMAL;
//   SERVELAB_ASSIGN_OR_RETURN(auto runner, LoadRunner::Create(options));
//   SERVELAB_ASSIGN_OR_RETURN(LoadSummary s, runner->Run(prompts, planned_send_ns, sink));
//
// Semantics:
// - Before the first request, one endpoint check: a TCP connection, and only when
//   options.model is empty also GET /v1/models for the first model id (real
//   P/D proxies lack that route, so the daemon always names the model). If
//   the server cannot be reached or the lookup fails, Run fails with
//   UNAVAILABLE and no model request is sent.
// - Request i arrives at planned_send_ns[i] (relative to the load start),
//   then waits for a free slot under the concurrency cap; the wait is its
//   queued_ns. sent_ns is when the client began sending it (taking a pooled
//   keep-alive connection, or connecting). first_token_ns (= chunk_ns[0]) is
//   when the first token's bytes reached the client's socket, by the kernel's
//   receive stamp (common/receive_stamp.h), so a client that reads late does
//   not add its own wait to TTFT; the summary says how long that wait was.
//   Every later chunk_ns and end_ns are taken as each read returns. All on
//   the steady clock.
// - Errors are per request (HTTP status >= 400 with the body's message,
//   connection failures, dropped streams, a stream without [DONE], timeouts
//   after options.request_timeout): recorded, the run goes on.
// - Cancel() ends the load: requests in flight are aborted and recorded with
//   error "cancelled"; requests not yet sent are recorded with error
//   "cancelled before send" and end_ns 0.
// - Records go to the sink from a writer thread at least every
//   options.flush_interval while any are pending, and once at the end; Run
//   returns only after the last batch is written. A sink error cancels the
//   load and is returned.
//
// Thread-safety: Run is called from one thread at a time and blocks it (the
// network runs on that thread, one io_context: a single core serves
// thousands of streams). Cancel() and progress() may be called from any
// thread; Cancel() before Run starts cancels that Run.
#ifndef SERVELAB_LOADGEN_LOAD_RUNNER_H_
#define SERVELAB_LOADGEN_LOAD_RUNNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "loadgen/dataset.h"
#include "loadgen/record_sink.h"
#include "servelab/v1/result.pb.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::loadgen {

struct LoadOptions {
  // "http://host:port[/base]".
  std::string url;
  v1::Api api = v1::API_COMPLETIONS;
  // The request's "model"; empty: the first id GET /v1/models lists.
  std::string model;
  // C: requests in flight at most. > 0.
  int concurrency = 1;
  absl::Duration request_timeout = absl::Minutes(10);
  absl::Duration connect_timeout = absl::Seconds(5);
  // Sent as `x-servelab-load: <tag>` on every request when not empty.
  std::string load_tag;
  // Copied into every record. Each request also carries
  // `x-request-id: RequestId(experiment_id, phase, attempt, index)`.
  std::string experiment_id;
  v1::Phase phase = v1::PHASE_FORMAL;
  int attempt = 1;
  absl::Duration flush_interval = absl::Milliseconds(100);
  // Open this many keep-alive connections (at most C) after the endpoint check, so
  // connection setup stays out of the measured requests. -1: min(C, N).
  int preconnect = -1;
  // The io thread runs SCHED_FIFO at this priority for the run (0: ordinary
  // scheduling), so that no other thread on its core delays an arrival
  // (loadgen/realtime.h). Run refuses before sending if it is not permitted.
  int realtime_priority = 0;
};

struct LoadSummary {
  int64_t planned = 0;
  int64_t sent = 0;
  int64_t completed = 0;
  int64_t failed = 0;    // Sent, then an error (includes cancelled in flight).
  int64_t not_sent = 0;  // Cancelled before send.
  int64_t connections_opened = 0;
  absl::Duration wall;  // Load start to the last request's end.
  std::string model;    // The model the requests named.
  // How long first tokens waited in the client's socket before it read them
  // (read time - receive stamp), over the requests that got one, with the
  // percentiles of analysis::Percentile. Near zero unless the client's core
  // is busy; the records' TTFT does not include it.
  absl::Duration first_token_read_lag_p50;
  absl::Duration first_token_read_lag_p99;
  absl::Duration first_token_read_lag_max;
};

// Live counters, readable from any thread while Run runs.
struct LoadProgress {
  int64_t sent = 0;
  int64_t completed = 0;
  int64_t failed = 0;
};

// "<experiment_id>/<phase number>/<attempt>/<index>".
std::string RequestId(const std::string& experiment_id, v1::Phase phase, int attempt, int index);

class LoadRunner {
 public:
  // Errors: INVALID_ARGUMENT for a bad URL or concurrency <= 0 (naming the option).
  static absl::StatusOr<std::unique_ptr<LoadRunner>> Create(LoadOptions options);
  ~LoadRunner();
  LoadRunner(const LoadRunner&) = delete;
  LoadRunner& operator=(const LoadRunner&) = delete;

  // `planned_send_ns` is empty (all at 0) or one entry per prompt.
  // Each prompt is made (PromptSet::Get) just before its request is sent.
  absl::StatusOr<LoadSummary> Run(const PromptSet& prompts,
                                  const std::vector<int64_t>& planned_send_ns, RecordSink& sink);

  void Cancel();
  LoadProgress progress() const;

 private:
  class Impl;
  explicit LoadRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace servelab::loadgen

#endif  // SERVELAB_LOADGEN_LOAD_RUNNER_H_
