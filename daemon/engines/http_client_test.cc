#include "daemon/engines/http_client.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "daemon/engines/render_common.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::engines {
namespace {

using ::servelab::testing::BinPath;
using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::servelab::testing::TempDir;
using ::servelab::testing::WaitFor;
using ::testing::HasSubstr;

TEST(HttpProbeTest, TalksToARealSim) {
  TempDir dir;
  std::string port_file = dir.File("port");
  testing::Process sim({BinPath("servelab-sim"), "--role", "unified", "--port", "0", "--port-file",
                        port_file, "--time-scale", "0.01", "--model", "probe-model"},
                       dir.File("sim"));
  ASSERT_TRUE(WaitFor([&] { return testing::FileExists(port_file); }, absl::Seconds(20)));
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(testing::ReadFile(port_file)), &port));

  ASSERT_TRUE(WaitFor(
      [&] {
        absl::StatusOr<HttpResponse> r = HttpGet(port, "/health", absl::Seconds(1));
        return r.ok() && r->status == 200;
      },
      absl::Seconds(20)));
  absl::StatusOr<HttpResponse> metrics = HttpGet(port, "/metrics", absl::Seconds(5));
  ASSERT_THAT(metrics, IsOk());
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->body, HasSubstr("vllm:num_requests_running"));

  absl::StatusOr<HttpResponse> models = HttpGet(port, "/v1/models", absl::Seconds(5));
  ASSERT_THAT(models, IsOk());
  EXPECT_EQ(models->status, 200);
  EXPECT_THAT(models->body, HasSubstr("\"probe-model\""));

  absl::StatusOr<HttpResponse> reset = HttpPost(port, "/reset_prefix_cache", "", absl::Seconds(5));
  ASSERT_THAT(reset, IsOk());
  EXPECT_EQ(reset->status, 200);

  absl::StatusOr<HttpResponse> faults =
      HttpPost(port, "/admin/faults", R"({"error_next": 0})", absl::Seconds(5));
  ASSERT_THAT(faults, IsOk());
  EXPECT_EQ(faults->status, 200) << faults->body;

  absl::StatusOr<HttpResponse> missing = HttpGet(port, "/no/such/path", absl::Seconds(5));
  ASSERT_THAT(missing, IsOk());
  EXPECT_EQ(missing->status, 404);
  absl::StatusOr<HttpResponse> wrong_method = HttpPost(port, "/health", "{}", absl::Seconds(5));
  ASSERT_THAT(wrong_method, IsOk());
  EXPECT_EQ(wrong_method->status, 405);
}

TEST(HttpProbeTest, RefusedIsUnavailable) {
  absl::StatusOr<int> port = PickFreeLoopbackPort();
  ASSERT_THAT(port, IsOk());
  EXPECT_THAT(HttpGet(*port, "/health", absl::Seconds(2)),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("connect")));
}

TEST(HttpProbeTest, SilentServerIsDeadlineExceeded) {
  // Listens but never accepts: the connect completes (backlog), no answer comes.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  absl::Time start = absl::Now();
  EXPECT_THAT(HttpGet(ntohs(addr.sin_port), "/health", absl::Milliseconds(200)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("timed out")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  close(fd);
}

TEST(HttpProbeTest, ParsesChunkedAndContentLength) {
  absl::StatusOr<HttpResponse> r = ParseHttpResponse(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n "
      "world\r\n0\r\n\r\n");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello world");
  r = ParseHttpResponse("HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbusyXX");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "busy");
  EXPECT_THAT(ParseHttpResponse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("truncated")));
  EXPECT_THAT(ParseHttpResponse("SSH-2.0-OpenSSH\r\n\r\n"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("not an HTTP status line")));
}

}  // namespace
}  // namespace servelab::engines
