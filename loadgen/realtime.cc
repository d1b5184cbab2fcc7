#include "loadgen/realtime.h"

#include <pthread.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace servelab::loadgen {

absl::Status ValidateRealtimePriority(int priority) {
  const int max = sched_get_priority_max(SCHED_FIFO);
  if (priority < 0 || priority > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "must be 0 (ordinary scheduling) or a SCHED_FIFO priority 1-", max, ", got ", priority));
  }
  return absl::OkStatus();
}

absl::StatusOr<ThreadScheduling> EnterRealtime(int priority) {
  if (absl::Status valid = ValidateRealtimePriority(priority); !valid.ok()) return valid;
  ThreadScheduling previous;
  pthread_getschedparam(pthread_self(), &previous.policy, &previous.param);
  if (priority == 0) return previous;
  sched_param fifo{};
  fifo.sched_priority = priority;
  if (int error = pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo); error != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("SCHED_FIFO priority ", priority, " refused (", std::strerror(error),
                     "): it needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO of at least ", priority,
                     " (ulimit -r; systemd LimitRTPRIO=); 0 runs with ordinary scheduling"));
  }
  return previous;
}

void RestoreScheduling(const ThreadScheduling& previous) {
  pthread_setschedparam(pthread_self(), previous.policy, &previous.param);
}

absl::Status CheckRealtimeAllowed(int priority) {
  absl::StatusOr<ThreadScheduling> previous = EnterRealtime(priority);
  if (!previous.ok()) return previous.status();
  RestoreScheduling(*previous);
  return absl::OkStatus();
}

}  // namespace servelab::loadgen
