// Time source of the core, so tests can drive time by hand.
#ifndef SERVELAB_DAEMON_CORE_CLOCK_H_
#define SERVELAB_DAEMON_CORE_CLOCK_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace servelab::core {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
};

class RealClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
};

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_CLOCK_H_
