// The loopback floor's threads on io_uring (loopback_floor.h): what a sim or
// a client built on io_uring instead of one syscall per chunk would pay.
#include <liburing.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/loopback_floor_threads.h"

namespace servelab::bench::floor_threads {
namespace {

// One ring per thread; only that thread submits, and completions are posted
// when it asks for them, not by interrupting it (kernel 6.1+). Falls back to
// a plain ring on an older kernel.
struct Ring {
  io_uring ring{};
  bool ok = false;
  Ring(unsigned entries, unsigned completions, const char* who) {
    io_uring_params p{};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
    p.cq_entries = completions;
    int error = io_uring_queue_init_params(entries, &ring, &p);
    if (error == -EINVAL) {
      p = {};
      p.flags = IORING_SETUP_CQSIZE;
      p.cq_entries = completions;
      error = io_uring_queue_init_params(entries, &ring, &p);
    }
    ok = error == 0;
    if (!ok)
      std::fprintf(stderr, "loopback floor: io_uring for the %s: %s\n", who, strerror(-error));
  }
  ~Ring() {
    if (ok) io_uring_queue_exit(&ring);
  }
  // A free submission entry; submits the full queue first if need be.
  io_uring_sqe* Entry() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    if (sqe != nullptr) return sqe;
    io_uring_submit(&ring);
    return io_uring_get_sqe(&ring);
  }
};

// Provided buffers the kernel picks from for each received chunk, handed
// back once the chunk is counted.
class BufferRing {
 public:
  static constexpr unsigned kBuffers = 8192;  // a power of two
  static constexpr unsigned kBytes = 1024;
  static constexpr int kGroup = 1;

  explicit BufferRing(io_uring& ring) : memory_(size_t{kBuffers} * kBytes) {
    void* entries = nullptr;
    if (posix_memalign(&entries, 4096, kBuffers * sizeof(io_uring_buf)) != 0) return;
    entries_.reset(static_cast<io_uring_buf_ring*>(entries));
    io_uring_buf_ring_init(entries_.get());
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<unsigned long>(entries_.get());
    reg.ring_entries = kBuffers;
    reg.bgid = kGroup;
    const int error = io_uring_register_buf_ring(&ring, &reg, 0);
    if (error != 0) {
      std::fprintf(stderr, "loopback floor: io_uring buffer ring: %s\n", strerror(-error));
      return;
    }
    for (unsigned id = 0; id < kBuffers; ++id) Return(id);
    Publish();
    ok_ = true;
  }
  bool ok() const { return ok_; }
  void Return(unsigned id) {
    io_uring_buf_ring_add(entries_.get(), &memory_[size_t{id} * kBytes], kBytes, id,
                          io_uring_buf_ring_mask(kBuffers), returned_++);
  }
  void Publish() {
    io_uring_buf_ring_advance(entries_.get(), returned_);
    returned_ = 0;
  }

 private:
  struct Free {
    void operator()(io_uring_buf_ring* p) const { free(p); }
  };
  std::vector<char> memory_;
  std::unique_ptr<io_uring_buf_ring, Free> entries_;
  int returned_ = 0;
  bool ok_ = false;
};

}  // namespace

// The chunks due (a round's, or those of a spread round due by now) in one
// submission, then their completions.
bool SendWithIoUring(const LoopbackFloorOptions& o, const std::vector<int>& fds, Window& w) {
  PinThisThread(o.sender_core);
  Ring r(4096, 8192, "sender");
  if (!r.ok) return false;
  const std::string chunk(static_cast<size_t>(o.chunk_bytes), 'x');
  long long sent = 0;
  RoundPacer pacer(o, fds.size());
  while (w.Track(sent)) {
    const auto [first, last] = pacer.NextDue();
    for (size_t i = first; i < last; ++i) {
      io_uring_prep_send(r.Entry(), fds[i], chunk.data(), chunk.size(), MSG_DONTWAIT);
    }
    io_uring_submit_and_wait(&r.ring, static_cast<unsigned>(last - first));
    unsigned head, seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&r.ring, head, cqe) {
      if (cqe->res == o.chunk_bytes) ++sent;
      ++seen;
    }
    io_uring_cq_advance(&r.ring, seen);
  }
  return true;
}

// One multishot receive per connection: each arriving chunk is a completion
// in a provided buffer, with no syscall of its own.
bool ReceiveWithIoUring(const LoopbackFloorOptions& o, const std::vector<int>& fds, Window& w) {
  PinThisThread(o.receiver_core);
  Ring r(4096, 16384, "receiver");
  if (!r.ok) return false;
  BufferRing buffers(r.ring);
  if (!buffers.ok()) return false;
  auto arm = [&](size_t i) {
    io_uring_sqe* sqe = r.Entry();
    io_uring_prep_recv_multishot(sqe, fds[i], nullptr, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BufferRing::kGroup;
    io_uring_sqe_set_data64(sqe, i);
  };
  for (size_t i = 0; i < fds.size(); ++i) arm(i);
  long long bytes = 0;
  while (w.Track(bytes / o.chunk_bytes)) {
    __kernel_timespec wait{.tv_sec = 0, .tv_nsec = 10'000'000};
    io_uring_cqe* cqe;
    io_uring_submit_and_wait_timeout(&r.ring, &cqe, 1, &wait, nullptr);
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&r.ring, head, cqe) {
      ++seen;
      if (cqe->res > 0) {
        bytes += cqe->res;
        buffers.Return(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
      }
      // Out of buffers ends a multishot receive; ask again (not after EOF).
      if (!(cqe->flags & IORING_CQE_F_MORE) && cqe->res != 0) arm(cqe->user_data);
    }
    buffers.Publish();
    io_uring_cq_advance(&r.ring, seen);
  }
  return true;
}

}  // namespace servelab::bench::floor_threads
