#include "common/receive_stamp.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace servelab {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A connected loopback TCP pair: [0] the client's end, [1] the accepted one.
struct TcpPair {
  TcpPair() {
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address);
    listen(listener, 1);
    getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
    fds[0] = socket(AF_INET, SOCK_STREAM, 0);
    connect(fds[0], reinterpret_cast<sockaddr*>(&address), sizeof address);
    fds[1] = accept(listener, nullptr, nullptr);
    close(listener);
  }
  ~TcpPair() {
    close(fds[0]);
    close(fds[1]);
  }
  int fds[2];
};

// Sends a byte at a time until one comes stamped: the kernel turns stamping
// on for the machine a moment after the first socket asks.
bool WaitUntilStamped(const TcpPair& pair) {
  char byte;
  for (int i = 0; i < 500; ++i) {
    if (write(pair.fds[0], "s", 1) != 1) return false;
    std::this_thread::sleep_for(milliseconds(10));
    if (ReceiveStamped(pair.fds[1], &byte, 1, MSG_DONTWAIT).stamped) return true;
  }
  return false;
}

TEST(ReceiveStampTest, BytesReadLateCarryWhenTheyCame) {
  TcpPair pair;
  ASSERT_GE(pair.fds[1], 0);
  ASSERT_TRUE(EnableReceiveStamps(pair.fds[1]));
  ASSERT_TRUE(WaitUntilStamped(pair));
  const auto sent = steady_clock::now();
  ASSERT_EQ(write(pair.fds[0], "abc", 3), 3);
  std::this_thread::sleep_for(milliseconds(200));
  char buf[8];
  // A peek leaves the bytes; both reads see the same stamp.
  StampedRead peek = ReceiveStamped(pair.fds[1], buf, 1, MSG_PEEK | MSG_DONTWAIT);
  StampedRead read = ReceiveStamped(pair.fds[1], buf, sizeof buf, MSG_DONTWAIT);
  const auto now = steady_clock::now();
  ASSERT_EQ(peek.bytes, 1);
  ASSERT_EQ(read.bytes, 3);
  EXPECT_TRUE(peek.stamped && read.stamped);
  EXPECT_EQ(std::string(buf, 3), "abc");
  EXPECT_GE(read.received, sent - milliseconds(5));  // Clock conversion, not earlier.
  EXPECT_LT(read.received, sent + milliseconds(100));
  EXPECT_GE(now - read.received, milliseconds(150));
  EXPECT_LT(std::chrono::abs(peek.received - read.received), milliseconds(1));
}

TEST(ReceiveStampTest, WithoutStampsOrBytesItIsTheTimeOfTheCall) {
  TcpPair pair;
  ASSERT_GE(pair.fds[1], 0);
  char buf[8];
  StampedRead nothing = ReceiveStamped(pair.fds[1], buf, sizeof buf, MSG_DONTWAIT);
  EXPECT_EQ(nothing.bytes, -1);
  EXPECT_EQ(nothing.error, EAGAIN);
  EXPECT_FALSE(nothing.stamped);
  EXPECT_LT(steady_clock::now() - nothing.received, milliseconds(50));
  ASSERT_EQ(write(pair.fds[0], "x", 1), 1);
  std::this_thread::sleep_for(milliseconds(200));
  StampedRead unstamped = ReceiveStamped(pair.fds[1], buf, sizeof buf, MSG_DONTWAIT);
  ASSERT_EQ(unstamped.bytes, 1);
  EXPECT_FALSE(unstamped.stamped);
  EXPECT_LT(steady_clock::now() - unstamped.received, milliseconds(50));
}

}  // namespace
}  // namespace servelab
