// RecordSink: where a load's raw request records go, in batches, while the
// load runs. The daemon's sink appends to its Store; servelab-load writes an
// SQLite or JSONL file (record_file.h).
//
// The runner calls Write from one thread at a time (its writer thread), at
// least every 100 ms while records are pending, so a crash loses at most the
// last batch; implementations need not be thread-safe. A failed Write stops
// the load (it is cancelled) and the error is returned by the runner.
#ifndef SERVELAB_LOADGEN_RECORD_SINK_H_
#define SERVELAB_LOADGEN_RECORD_SINK_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "servelab/v1/result.pb.h"

namespace servelab::loadgen {

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // Durable when it returns OK.
  virtual absl::Status Write(const std::vector<v1::RequestRecord>& records) = 0;
};

// Hands every batch to a function (e.g. the daemon's Store::AppendRequests).
class CallbackSink : public RecordSink {
 public:
  using Callback = std::function<absl::Status(const std::vector<v1::RequestRecord>&)>;
  explicit CallbackSink(Callback callback) : callback_(std::move(callback)) {}
  absl::Status Write(const std::vector<v1::RequestRecord>& records) override {
    return callback_(records);
  }

 private:
  Callback callback_;
};

// Keeps records in memory (tests, and callers that analyze right away).
class MemorySink : public RecordSink {
 public:
  absl::Status Write(const std::vector<v1::RequestRecord>& records) override {
    ++batches_;
    records_.insert(records_.end(), records.begin(), records.end());
    return absl::OkStatus();
  }
  const std::vector<v1::RequestRecord>& records() const { return records_; }
  int batches() const { return batches_; }

 private:
  std::vector<v1::RequestRecord> records_;
  int batches_ = 0;
};

}  // namespace servelab::loadgen

#endif  // SERVELAB_LOADGEN_RECORD_SINK_H_
