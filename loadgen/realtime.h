// Real-time scheduling of the load's io thread. The host's own threads
// (kdamond, rcu_preempt, a tool's poller) took the client's core for 1-13 ms
// at a time, and every arrival due meanwhile was that late; SCHED_FIFO
// preempts them the moment a timer fires (issue 9, P4; docs/design.md §10).
#ifndef SERVELAB_LOADGEN_REALTIME_H_
#define SERVELAB_LOADGEN_REALTIME_H_

#include <sched.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace servelab::loadgen {

// A thread's scheduling, to put back after a real-time run.
struct ThreadScheduling {
  int policy = SCHED_OTHER;
  sched_param param{};
};

// OK for 0 (off) and for a SCHED_FIFO priority, 1-99.
absl::Status ValidateRealtimePriority(int priority);

// Runs the calling thread SCHED_FIFO at `priority` (0: leaves it as it is)
// and returns its previous scheduling. The error says what grants it.
absl::StatusOr<ThreadScheduling> EnterRealtime(int priority);
void RestoreScheduling(const ThreadScheduling& previous);

// Whether EnterRealtime(priority) would succeed: tries it on the calling
// thread and puts the thread back. For refusing at start, before anything
// is stored or sent.
absl::Status CheckRealtimeAllowed(int priority);

}  // namespace servelab::loadgen

#endif  // SERVELAB_LOADGEN_REALTIME_H_
