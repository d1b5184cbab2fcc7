#include "bench/loopback_floor.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench/loopback_floor_threads.h"

namespace servelab::bench {
namespace floor_threads {

double Now(clockid_t clock) {
  timespec t;
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

void PinThisThread(int core) {
  if (core < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

bool Window::Track(long long count) {
  const double now = Now(CLOCK_MONOTONIC);
  if (!started && now >= start) {
    started = true;
    cpu_at_start = Now(CLOCK_THREAD_CPUTIME_ID);
    count_at_start = count;
  }
  if (now < end) return true;
  cpu_at_end = Now(CLOCK_THREAD_CPUTIME_ID);
  count_at_end = count;
  return false;
}

RoundPacer::RoundPacer(const LoopbackFloorOptions& o, size_t connections)
    : o_(o), connections_(connections), round_at_(Now(CLOCK_MONOTONIC)) {}

double RoundPacer::DueAt(size_t connection) const {
  if (!o_.spread) return round_at_;
  return round_at_ +
         o_.round_seconds * static_cast<double>(connection) / static_cast<double>(connections_);
}

std::pair<size_t, size_t> RoundPacer::NextDue() {
  if (o_.round_seconds <= 0) return {0, connections_};
  if (next_ == connections_) {
    next_ = 0;
    round_at_ += o_.round_seconds;
    const double now = Now(CLOCK_MONOTONIC);
    if (round_at_ < now) round_at_ = now;  // Late: no catch-up rounds.
  }
  const double at = DueAt(next_);
  const timespec wake{.tv_sec = static_cast<time_t>(at),
                      .tv_nsec = static_cast<long>((at - static_cast<time_t>(at)) * 1e9)};
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nullptr);
  const double now = Now(CLOCK_MONOTONIC);
  const size_t first = next_;
  while (next_ < connections_ && DueAt(next_) <= now) ++next_;
  if (next_ == first) ++next_;  // Woken a hair early: its time has come.
  return {first, next_};
}

bool SendWithWrite(const LoopbackFloorOptions& o, const std::vector<int>& fds, Window& w) {
  PinThisThread(o.sender_core);
  const std::string chunk(static_cast<size_t>(o.chunk_bytes), 'x');
  long long sent = 0;
  RoundPacer pacer(o, fds.size());
  while (w.Track(sent)) {
    const auto [first, last] = pacer.NextDue();
    for (size_t i = first; i < last; ++i) {
      if (write(fds[i], chunk.data(), chunk.size()) == static_cast<ssize_t>(chunk.size())) ++sent;
    }
  }
  return true;
}

bool ReceiveWithEpoll(const LoopbackFloorOptions& o, const std::vector<int>& fds, Window& w) {
  PinThisThread(o.receiver_core);
  const int epoll = epoll_create1(0);
  for (size_t i = 0; i < fds.size(); ++i) {
    epoll_event e{.events = EPOLLIN, .data = {.u64 = i}};
    epoll_ctl(epoll, EPOLL_CTL_ADD, fds[i], &e);
  }
  std::vector<epoll_event> ready(512);
  std::vector<char> buffer(64 * 1024);
  long long bytes = 0;
  while (w.Track(bytes / o.chunk_bytes)) {
    const int n = epoll_wait(epoll, ready.data(), static_cast<int>(ready.size()), 10);
    for (int i = 0; i < n; ++i) {
      const ssize_t got = read(fds[ready[i].data.u64], buffer.data(), buffer.size());
      if (got > 0) bytes += got;
    }
  }
  close(epoll);
  return true;
}

}  // namespace floor_threads

namespace {

// The pairs of connected sockets, closed on destruction.
struct Connections {
  std::vector<int> sending, receiving;
  ~Connections() {
    for (int fd : sending) close(fd);
    for (int fd : receiving) close(fd);
  }
};

bool Connect(int n, Connections& c) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bool ok = listener >= 0 && bind(listener, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
            listen(listener, 4096) == 0 &&
            getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  for (int i = 0; ok && i < n; ++i) {
    int receiving = socket(AF_INET, SOCK_STREAM, 0);
    ok = receiving >= 0 && connect(receiving, reinterpret_cast<sockaddr*>(&addr), len) == 0;
    int sending = ok ? accept(listener, nullptr, nullptr) : -1;
    ok = ok && sending >= 0;
    if (receiving >= 0) c.receiving.push_back(receiving);
    if (sending >= 0) c.sending.push_back(sending);
    if (!ok) break;
    // As a server streaming tokens does: no Nagle delay, never block.
    const int one = 1;
    setsockopt(sending, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(sending, F_SETFL, O_NONBLOCK);
    fcntl(receiving, F_SETFL, O_NONBLOCK);
  }
  if (!ok) std::perror("loopback floor: setting up connections");
  if (listener >= 0) close(listener);
  return ok;
}

}  // namespace

const char* Describe(KernelInterface interface) {
  return interface == KernelInterface::kIoUring ? "io_uring" : "write/epoll+read";
}

std::vector<LoopbackFloorOptions> FloorVariants(const LoopbackFloorOptions& base) {
  std::vector<LoopbackFloorOptions> variants;
  for (bool spread : {false, true}) {
    if (spread && base.round_seconds <= 0) continue;
    for (KernelInterface interface : kKernelInterfaces) {
      LoopbackFloorOptions options = base;
      options.spread = spread;
      options.interface = interface;
      variants.push_back(options);
    }
  }
  return variants;
}

std::string DescribePacing(const LoopbackFloorOptions& o) {
  char pacing[96] = "round, unpaced";
  if (o.round_seconds > 0) {
    std::snprintf(pacing, sizeof pacing, "%g ms %s", o.round_seconds * 1e3,
                  o.spread ? "spread over the round" : "all at once");
  }
  return std::string(pacing) + ", " + Describe(o.interface);
}

LoopbackFloor MeasureLoopbackFloor(const LoopbackFloorOptions& o) {
  using namespace floor_threads;
  LoopbackFloor floor;
  Connections c;
  if (!Connect(o.connections, c)) return floor;
  const double start = Now(CLOCK_MONOTONIC) + o.warmup_seconds;
  Window sent{.start = start, .end = start + o.seconds};
  Window received = sent;
  const bool uring = o.interface == KernelInterface::kIoUring;
  bool sender_ok = false;
  std::thread sender([&] {
    sender_ok = uring ? SendWithIoUring(o, c.sending, sent) : SendWithWrite(o, c.sending, sent);
  });
  const bool receiver_ok = uring ? ReceiveWithIoUring(o, c.receiving, received)
                                 : ReceiveWithEpoll(o, c.receiving, received);
  sender.join();
  if (!sender_ok || !receiver_ok) return floor;
  const double wall = o.seconds;
  floor.sent_per_second = static_cast<double>(sent.Count()) / wall;
  floor.received_per_second = static_cast<double>(received.Count()) / wall;
  if (sent.Count() > 0) floor.sender_us_per_chunk = sent.Cpu() * 1e6 / sent.Count();
  if (received.Count() > 0) {
    floor.receiver_us_per_chunk = received.Cpu() * 1e6 / received.Count();
  }
  floor.sender_core_share = sent.Cpu() / wall;
  floor.receiver_core_share = received.Cpu() / wall;
  floor.ok = true;
  return floor;
}

}  // namespace servelab::bench
