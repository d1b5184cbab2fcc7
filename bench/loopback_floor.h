// The kernel's own cost of a streamed chunk on this machine, with no server
// or client code around it: the floor under the sim's chunks per core (P6),
// the load generator's CPU per chunk (P3) and, where both cores reach 1.0,
// the TTFT gap (P5). Design §10, "The kernel's floor".
//
// N loopback TCP connections. A sender thread sends one chunk on every
// connection per round, as the sim does once per decode step; a receiver
// thread takes each chunk as it arrives, the least a client that stamps
// every chunk can do. The round's chunks go out all at once, as the sim's
// shared decode steps make them due, or spread over the round, each
// connection at its own time, as streams each paced on its own timer are
// (they started at different times): then a receiver that keeps up wakes
// for almost every chunk, and pays the wake-up each time. Each thread is
// pinned to its own core and timed by its own CPU clock, which on a kernel
// without IRQ_TIME_ACCOUNTING includes the softirq work done in its syscalls
// (on loopback, the sender's send runs the receiver's TCP stack too).
//
// Two ways of talking to the kernel are measured, because the floor depends
// on which one a program uses: one syscall per chunk (write(); epoll_wait()
// and read(), what Asio does and so what the sim and servelab-load do today)
// and io_uring (a round's sends in one submission; a multishot receive per
// connection into a ring of provided buffers, so many chunks per syscall).
#ifndef SERVELAB_BENCH_LOOPBACK_FLOOR_H_
#define SERVELAB_BENCH_LOOPBACK_FLOOR_H_

#include <string>
#include <vector>

namespace servelab::bench {

enum class KernelInterface { kSyscallPerChunk, kIoUring };
// Every interface, in the order the benches print their floors.
inline constexpr KernelInterface kKernelInterfaces[] = {KernelInterface::kSyscallPerChunk,
                                                        KernelInterface::kIoUring};
const char* Describe(KernelInterface interface);  // "write/epoll+read", "io_uring"

struct LoopbackFloorOptions {
  int connections = 200;
  // Time between rounds (a decode step); 0: the next round at once.
  double round_seconds = 0.02;
  // Connection i's chunk at i / N of the way into each round, rather than
  // every chunk at the round's start.
  bool spread = false;
  int chunk_bytes = 200;  // about one SSE chunk of a completion stream
  double warmup_seconds = 0.5;
  double seconds = 3;  // measured window
  int sender_core = 1;
  int receiver_core = 0;
  KernelInterface interface = KernelInterface::kSyscallPerChunk;
};

struct LoopbackFloor {
  double sent_per_second = 0;      // chunks sent in full
  double received_per_second = 0;  // chunk-sized bytes received
  double sender_us_per_chunk = 0;  // sender thread CPU per chunk sent
  double receiver_us_per_chunk = 0;
  double sender_core_share = 0;  // sender thread CPU / wall
  double receiver_core_share = 0;
  bool ok = false;  // false (after printing why) if the sockets or the rings could not be set up
};

LoopbackFloor MeasureLoopbackFloor(const LoopbackFloorOptions& options);

// The floors a bench prints after a run paced like `base`: each interface,
// with each round's chunks all at once and then spread (unpaced rounds have
// nothing to spread over, so only all at once).
std::vector<LoopbackFloorOptions> FloorVariants(const LoopbackFloorOptions& base);
// "20 ms spread over the round, io_uring", "round, unpaced, write/epoll+read"
std::string DescribePacing(const LoopbackFloorOptions& options);

}  // namespace servelab::bench

#endif  // SERVELAB_BENCH_LOOPBACK_FLOOR_H_
