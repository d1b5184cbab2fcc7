#include "sim/compat.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace servelab::sim {
namespace {

using ::servelab::testing::IsOk;

TEST(CompatTest, ParsesEveryProfileAndRejectsOthers) {
  for (const char* name : {"sim", "vllm", "vllm-ascend", "sglang"}) {
    absl::StatusOr<Compat> c = ParseCompat(name);
    ASSERT_THAT(c, IsOk());
    EXPECT_STREQ(CompatName(*c), name);
  }
  EXPECT_FALSE(ParseCompat("trtllm").ok());
}

TEST(CompatTest, CachedTokensRulePerProfile) {
  CompatOptions sim;
  EXPECT_TRUE(ReportsCachedTokens(sim, 0));
  CompatOptions vllm{Compat::kVllm};
  EXPECT_FALSE(ReportsCachedTokens(vllm, 16));
  vllm.enable_prompt_tokens_details = true;
  EXPECT_FALSE(ReportsCachedTokens(vllm, 0));
  EXPECT_TRUE(ReportsCachedTokens(vllm, 16));
  CompatOptions sglang{Compat::kSglang};
  sglang.enable_prompt_tokens_details = true;  // vLLM's flag does nothing here
  EXPECT_FALSE(ReportsCachedTokens(sglang, 16));
  sglang.enable_cache_report = true;
  EXPECT_TRUE(ReportsCachedTokens(sglang, 16));
  EXPECT_FALSE(ReportsCachedTokens(sglang, 0));
}

TEST(CompatTest, RoutesPerProfile) {
  CompatOptions vllm{Compat::kVllmAscend};
  EXPECT_FALSE(ServesResetPrefixCache(vllm));
  vllm.dev_mode = true;
  EXPECT_TRUE(ServesResetPrefixCache(vllm));
  CompatOptions sglang{Compat::kSglang};
  sglang.dev_mode = true;
  EXPECT_FALSE(ServesResetPrefixCache(sglang));
  EXPECT_TRUE(ServesFlushCache(sglang));
  EXPECT_FALSE(ServesMetrics(sglang));
  sglang.enable_metrics = true;
  EXPECT_TRUE(ServesMetrics(sglang));
  EXPECT_TRUE(ServesMetrics(CompatOptions{}));
  EXPECT_EQ(DefaultKvLeaseSeconds(Compat::kSim), 0);
  EXPECT_GT(DefaultKvLeaseSeconds(Compat::kVllm), 0);
}

}  // namespace
}  // namespace servelab::sim
