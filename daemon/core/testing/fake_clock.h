// A Clock for tests whose time moves only when something sleeps on it or the
// test advances it: SleepFor(d) adds d to the time and returns at once (after
// yielding the CPU), so a poll loop with a deadline runs to its deadline
// without a real sleep, and a test reads exactly how long the code waited.
//
//   testing::FakeClock clock;
//   absl::Status s = DrainConfirm(env_with(clock), e);   // No real sleep.
//   EXPECT_GE(clock.slept(), drain_timeout);
//
// Every sleeper moves the one shared time, so with several threads sleeping
// time runs faster than any one of them waits: deadlines still fire, but
// tests should not count polls across threads. Thread-safe.
#ifndef SERVELAB_DAEMON_CORE_TESTING_FAKE_CLOCK_H_
#define SERVELAB_DAEMON_CORE_TESTING_FAKE_CLOCK_H_

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/core/clock.h"

namespace servelab::core::testing {

class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'780'000'000)) : now_(start) {}

  absl::Time Now() override {
    absl::MutexLock lock(&mu_);
    return now_;
  }

  void SleepFor(absl::Duration duration) override {
    {
      absl::MutexLock lock(&mu_);
      if (duration > absl::ZeroDuration()) {
        now_ += duration;
        slept_ += duration;
      }
      ++sleeps_;
    }
    // A sleeping thread lets the others run, as a real sleep would.
    std::this_thread::yield();
  }

  void Advance(absl::Duration duration) {
    absl::MutexLock lock(&mu_);
    now_ += duration;
  }

  // How often, and how long in total, anything slept on this clock.
  int sleeps() const {
    absl::MutexLock lock(&mu_);
    return sleeps_;
  }
  absl::Duration slept() const {
    absl::MutexLock lock(&mu_);
    return slept_;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  absl::Duration slept_ ABSL_GUARDED_BY(mu_);
  int sleeps_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace servelab::core::testing

#endif  // SERVELAB_DAEMON_CORE_TESTING_FAKE_CLOCK_H_
