#include "daemon/service/peer_checked_listener.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>

#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::service {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

constexpr uid_t kNobody = 65534;

int Connect(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// True when the peer closed `fd` within 10 s (read returns 0).
bool ClosedByPeer(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 10000) != 1) return false;
  char byte;
  return read(fd, &byte, 1) == 0;
}

struct Accepted {
  std::atomic<int> count{0};
  std::atomic<int> last_fd{-1};
  PeerCheckedListener::AcceptFn Fn() {
    return [this](int fd) {
      int old = last_fd.exchange(fd);
      if (old >= 0) close(old);
      count.fetch_add(1);
    };
  }
  ~Accepted() {
    if (last_fd >= 0) close(last_fd);
  }
};

TEST(PeerCheckedListenerTest, SocketIsOwnerOnlyAndTheOwnersConnectionIsHandedOver) {
  testing::TempDir dir;
  const std::string path = dir.File("d.sock");
  Accepted accepted;
  auto listener = PeerCheckedListener::Create(path, {geteuid()}, accepted.Fn());
  ASSERT_THAT(listener, IsOk());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600);

  int fd = Connect(path);
  ASSERT_GE(fd, 0) << strerror(errno);
  EXPECT_TRUE(testing::WaitFor([&] { return accepted.count == 1; }, absl::Seconds(10)));
  // The handed-over end is non-blocking, as gRPC's endpoints expect.
  EXPECT_NE(fcntl(accepted.last_fd, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_EQ((*listener)->refused(), 0);
  close(fd);
  (*listener)->Shutdown();
  (*listener)->Shutdown();  // idempotent
}

TEST(PeerCheckedListenerTest, AnotherUsersConnectionIsClosedAndNeverHandedOver) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to connect as another user (uid 65534)";
  testing::TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0711), 0);
  const std::string path = dir.File("d.sock");
  Accepted accepted;
  auto listener = PeerCheckedListener::Create(path, {geteuid()}, accepted.Fn());
  ASSERT_THAT(listener, IsOk());
  // Loosen the mode by hand, as an operator might: the uid check still holds.
  ASSERT_EQ(chmod(path.c_str(), 0666), 0);

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(2);
    int fd = Connect(path);
    if (fd < 0) _exit(3);
    _exit(ClosedByPeer(fd) ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: setuid failed, 3: connect failed, 4: not closed";
  EXPECT_TRUE(testing::WaitFor([&] { return (*listener)->refused() == 1; }, absl::Seconds(10)));
  EXPECT_EQ(accepted.count, 0);
}

TEST(PeerCheckedListenerTest, APathTooLongForASocketIsUnavailableAndNamesIt) {
  const std::string path = "/tmp/" + std::string(120, 'x') + ".sock";
  Accepted accepted;
  EXPECT_THAT(PeerCheckedListener::Create(path, {geteuid()}, accepted.Fn()),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("longer than")));
  EXPECT_FALSE(testing::FileExists(path));
}

TEST(PeerCheckedListenerTest, APathInUseIsUnavailableAndLeftAlone) {
  testing::TempDir dir;
  const std::string path = dir.File("d.sock");
  testing::WriteFile(path, "not a socket");
  Accepted accepted;
  EXPECT_THAT(PeerCheckedListener::Create(path, {geteuid()}, accepted.Fn()),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr(path)));
  EXPECT_EQ(testing::ReadFile(path), "not a socket");
}

}  // namespace
}  // namespace servelab::service
