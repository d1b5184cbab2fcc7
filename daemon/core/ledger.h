// Ledger: the single writer of experiment state. Every change is committed
// to the Store together with its event row, then announced to watchers.
// The control plane (API calls) and the stage runner (execution) both write
// through it, so their read-modify-write cycles never interleave.
//
//   ledger.Update(id, [&](v1::Experiment& e) -> absl::StatusOr<EventText> {
//     e.set_state(v1::EXPERIMENT_STATE_RUNNING);
//     return EventText{"state", "queued -> running"};
//   });
//
// Thread-safe. Watchers are called after the commit, on the writer's thread,
// in commit order; they must not block, nor Subscribe/Unsubscribe from
// inside the call. Once Unsubscribe returns, that listener is not called again.
#ifndef SERVELAB_DAEMON_CORE_LEDGER_H_
#define SERVELAB_DAEMON_CORE_LEDGER_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/clock.h"
#include "daemon/core/store.h"

namespace servelab::core {

struct EventText {
  std::string kind;
  std::string detail;
  // Bookkeeping between two facts may be kOrdered (store.h); the default
  // reaches the disk before Update returns. Create always syncs.
  Durability durability = Durability::kSynced;
};

class Ledger {
 public:
  // `store` and `clock` must outlive the ledger.
  Ledger(Store& store, Clock& clock);

  // Stores a new experiment; the returned copy carries its id.
  // With `records`, they are stored in the same transaction (an import).
  absl::StatusOr<v1::Experiment> Create(v1::Experiment experiment, const EventText& event,
                                        const std::vector<v1::RequestRecord>& records = {});

  // Reads experiment `id`, lets `mutate` change it and commits the result
  // with the event `mutate` returns. When `mutate` fails nothing is written
  // and its error is returned. NOT_FOUND names the id. updated_at is set.
  using Mutation = std::function<absl::StatusOr<EventText>(v1::Experiment&)>;
  absl::StatusOr<v1::Experiment> Update(std::string_view id, const Mutation& mutate);

  using Listener = std::function<void(const v1::Experiment&)>;
  // An empty experiment_id subscribes to every experiment.
  int Subscribe(const std::string& experiment_id, Listener listener);
  void Unsubscribe(int subscription);

  Store& store() { return store_; }
  Clock& clock() { return clock_; }

 private:
  void Notify(const v1::Experiment& experiment) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);

  Store& store_;
  Clock& clock_;

  // Held across read, mutate, commit and notify.
  absl::Mutex write_mu_;
  absl::Mutex listeners_mu_ ABSL_ACQUIRED_AFTER(write_mu_);
  int next_subscription_ ABSL_GUARDED_BY(listeners_mu_) = 1;
  struct Subscription {
    std::string experiment_id;
    Listener listener;
  };
  std::map<int, Subscription> subscriptions_ ABSL_GUARDED_BY(listeners_mu_);
};

// Time conversions used wherever the core stamps or reads a message.
google::protobuf::Timestamp ToTimestamp(absl::Time t);
absl::Time FromTimestamp(const google::protobuf::Timestamp& t);
absl::Duration FromDuration(const google::protobuf::Duration& d);

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_LEDGER_H_
