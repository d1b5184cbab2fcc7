#include "sim/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace servelab::sim {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ConfigTest, EmptyFileGivesDefaults) {
  absl::StatusOr<SimConfig> c = ParseSimConfig("", "t.yaml");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->max_num_seqs, 256);
  EXPECT_EQ(c->model, "servelab-sim");
}

TEST(ConfigTest, ReadsModelAndFaults) {
  absl::StatusOr<SimConfig> c = ParseSimConfig(
      "model: m1\nmax_num_seqs: 8\nprefill_seconds_per_token: 0.001\n"
      "enable_prefix_caching: false\nfaults:\n  error_fraction: 0.25\n  exit_after_requests: 3\n",
      "t.yaml");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->model, "m1");
  EXPECT_EQ(c->max_num_seqs, 8);
  EXPECT_DOUBLE_EQ(c->prefill_seconds_per_token, 0.001);
  EXPECT_FALSE(c->enable_prefix_caching);
  EXPECT_DOUBLE_EQ(c->faults.error_fraction, 0.25);
  EXPECT_EQ(c->faults.exit_after_requests, 3);
}

TEST(ConfigTest, KvLeaseSecondsIsUnsetUnlessGiven) {
  absl::StatusOr<SimConfig> c = ParseSimConfig("", "t.yaml");
  ASSERT_THAT(c, IsOk());
  EXPECT_FALSE(c->kv_lease_seconds.has_value());
  c = ParseSimConfig("kv_lease_seconds: 0.5\n", "t.yaml");
  ASSERT_THAT(c, IsOk());
  EXPECT_DOUBLE_EQ(c->kv_lease_seconds.value_or(-1), 0.5);
  EXPECT_THAT(ParseSimConfig("kv_lease_seconds: -1\n", "t.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("kv_lease_seconds")));
}

TEST(ConfigTest, UnknownKeyIsAnErrorNamingIt) {
  EXPECT_THAT(ParseSimConfig("max_num_seq: 8\n", "t.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_num_seq")));
  EXPECT_THAT(ParseSimConfig("faults:\n  hang: 1\n", "t.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("faults.hang")));
}

TEST(ConfigTest, WrongTypesAndRangesAreErrors) {
  EXPECT_THAT(ParseSimConfig("max_num_seqs: lots\n", "t.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_num_seqs")));
  EXPECT_THAT(ParseSimConfig("max_num_seqs: 0\n", "t.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_num_seqs")));
  EXPECT_THAT(ParseSimConfig("faults:\n  error_fraction: 2\n", "t.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fraction")));
}

TEST(ConfigTest, MergeFaultsIsAllOrNothing) {
  FaultConfig f;
  absl::StatusOr<JsonValue> body = ParseJson(R"({"hang_next": 2, "error_fraction": 0.5})");
  ASSERT_THAT(MergeFaults(*body, f), IsOk());
  EXPECT_EQ(f.hang_next, 2);
  EXPECT_DOUBLE_EQ(f.error_fraction, 0.5);
  body = ParseJson(R"({"hang_next": 5, "bogus": 1})");
  EXPECT_THAT(MergeFaults(*body, f),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bogus")));
  EXPECT_EQ(f.hang_next, 2);
  body = ParseJson(R"({"hang_next": 1.5})");
  EXPECT_FALSE(MergeFaults(*body, f).ok());
  body = ParseJson(R"({"clear": true, "drop_next": 1})");
  ASSERT_THAT(MergeFaults(*body, f), IsOk());
  EXPECT_EQ(f.hang_next, 0);
  EXPECT_EQ(f.drop_next, 1);
}

TEST(ConfigTest, Roles) {
  EXPECT_EQ(*ParseRole("prefill"), Role::kPrefill);
  EXPECT_EQ(*ParseRole("router"), Role::kRouter);
  EXPECT_FALSE(ParseRole("proxy").ok());
}

}  // namespace
}  // namespace servelab::sim
