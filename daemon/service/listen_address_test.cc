#include "daemon/service/listen_address.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace servelab::service {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ParseListenAddressTest, Unix) {
  auto address = ParseListenAddress("unix:/tmp/x/servelab.sock", false);
  ASSERT_THAT(address, IsOk());
  EXPECT_EQ(address->kind, ListenAddress::Kind::kUnix);
  EXPECT_EQ(address->grpc_uri(), "unix:/tmp/x/servelab.sock");
  EXPECT_EQ(address->ToString(), "unix:/tmp/x/servelab.sock");
}

TEST(ParseListenAddressTest, LoopbackTcp) {
  auto address = ParseListenAddress("tcp:127.0.0.1:0", false);
  ASSERT_THAT(address, IsOk());
  EXPECT_EQ(address->grpc_uri(), "127.0.0.1:0");
  EXPECT_EQ(address->ToString(), "tcp:127.0.0.1:0");
  auto v6 = ParseListenAddress("tcp:[::1]:7000", false);
  ASSERT_THAT(v6, IsOk());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 7000);
  EXPECT_EQ(v6->grpc_uri(), "[::1]:7000");
  EXPECT_THAT(ParseListenAddress("tcp:localhost:1", false), IsOk());
}

TEST(ParseListenAddressTest, RemoteNeedsAllowRemote) {
  EXPECT_THAT(ParseListenAddress("tcp:0.0.0.0:50051", false),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("--allow-remote")));
  EXPECT_THAT(ParseListenAddress("tcp:[::]:50051", false),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("--allow-remote")));
  EXPECT_THAT(ParseListenAddress("tcp:example.com:1", false),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("example.com")));
  EXPECT_THAT(ParseListenAddress("tcp:0.0.0.0:50051", true), IsOk());
}

TEST(ParseListenAddressTest, Malformed) {
  for (const char* bad : {"", "127.0.0.1:1", "unix:", "tcp:", "tcp:127.0.0.1", "tcp:1.2.3.4:x",
                          "tcp:127.0.0.1:70000", "tcp:[::1:5", "tcp:::1:5"}) {
    EXPECT_THAT(ParseListenAddress(bad, true),
                StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_))
        << bad;
  }
}

TEST(IsLoopbackHostTest, Hosts) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.8.9.10"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("::"));
}

}  // namespace
}  // namespace servelab::service
