// Time source of the core, so tests can drive time by hand. Every read of
// the time and every wait in daemon/core goes through a Clock:
//
//   const absl::Time deadline = clock.Now() + timeout;
//   while (!Done()) {
//     if (clock.Now() >= deadline) return absl::DeadlineExceededError(...);
//     clock.SleepFor(poll);
//   }
//
// RealClock is the wall clock; testing::FakeClock (daemon/core/testing/)
// moves only when slept on or advanced. Implementations are thread-safe.
#ifndef SERVELAB_DAEMON_CORE_CLOCK_H_
#define SERVELAB_DAEMON_CORE_CLOCK_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace servelab::core {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
  // Blocks the calling thread for `duration` of this clock's time.
  virtual void SleepFor(absl::Duration duration) = 0;
};

class RealClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  void SleepFor(absl::Duration duration) override { absl::SleepFor(duration); }
};

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_CLOCK_H_
