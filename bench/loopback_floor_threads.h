// The two threads of a loopback floor measurement (loopback_floor.h), once
// per kernel interface, and what they share: the measured window and the
// pacing of rounds. Internal to loopback_floor*.cc.
#ifndef SERVELAB_BENCH_LOOPBACK_FLOOR_THREADS_H_
#define SERVELAB_BENCH_LOOPBACK_FLOOR_THREADS_H_

#include <time.h>

#include <utility>
#include <vector>

#include "bench/loopback_floor.h"

namespace servelab::bench::floor_threads {

double Now(clockid_t clock);
void PinThisThread(int core);

// A thread's work counted over the measured window only.
struct Window {
  double start, end;  // CLOCK_MONOTONIC
  double cpu_at_start = 0, cpu_at_end = 0;
  long long count_at_start = 0, count_at_end = 0;
  bool started = false;

  // Call with the running count; false once the window is over.
  bool Track(long long count);
  long long Count() const { return count_at_end - count_at_start; }
  double Cpu() const { return cpu_at_end - cpu_at_start; }
};

// When each connection's chunk is due (LoopbackFloorOptions::round_seconds
// and spread). A late sender sends what is due at once and does not catch up
// on rounds it missed.
class RoundPacer {
 public:
  RoundPacer(const LoopbackFloorOptions& o, size_t connections);
  // Sleeps until a chunk is due, then gives the connections due now:
  // [first, last). The next call goes on from `last`, wrapping to a new round.
  std::pair<size_t, size_t> NextDue();

 private:
  double DueAt(size_t connection) const;  // CLOCK_MONOTONIC
  const LoopbackFloorOptions& o_;
  const size_t connections_;
  double round_at_;
  size_t next_ = 0;
};

// Each runs until its window is over; false (after printing why) if it could
// not start, in which case its window counts nothing.
bool SendWithWrite(const LoopbackFloorOptions& o, const std::vector<int>& fds, Window& w);
bool ReceiveWithEpoll(const LoopbackFloorOptions& o, const std::vector<int>& fds, Window& w);
bool SendWithIoUring(const LoopbackFloorOptions& o, const std::vector<int>& fds, Window& w);
bool ReceiveWithIoUring(const LoopbackFloorOptions& o, const std::vector<int>& fds, Window& w);

}  // namespace servelab::bench::floor_threads

#endif  // SERVELAB_BENCH_LOOPBACK_FLOOR_THREADS_H_
