#include "loadgen/dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::loadgen {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

v1::DatasetSpec Spec(int in, int out, double ratio = 0, int groups = 0) {
  v1::DatasetSpec s;
  s.set_input_tokens(in);
  s.set_output_tokens(out);
  s.set_prefix_cache_ratio(ratio);
  s.set_prefix_groups(groups);
  s.set_seed(42);
  return s;
}

size_t CommonPrefix(const Prompt& a, const Prompt& b) {
  size_t n = 0;
  while (n < a.token_ids.size() && n < b.token_ids.size() && a.token_ids[n] == b.token_ids[n]) ++n;
  return n;
}

TEST(DatasetTest, ExactLengthsAndIdRange) {
  auto prompts = BuildPrompts(Spec(1000, 64), 5);
  ASSERT_THAT(prompts, IsOk());
  ASSERT_EQ(prompts->size(), 5u);
  for (const Prompt& p : prompts->All()) {
    EXPECT_EQ(p.token_ids.size(), 1000u);
    EXPECT_EQ(p.output_tokens, 64);
    EXPECT_EQ(p.prefix_group, -1);
    for (int32_t id : p.token_ids) {
      ASSERT_GE(id, kMinTokenId);
      ASSERT_LT(id, kMaxTokenId);
    }
  }
  // No accidental sharing without a prefix ratio.
  EXPECT_LT(CommonPrefix(prompts->Get(0), prompts->Get(1)), 3u);
}

TEST(DatasetTest, DeterministicAndIndependentOfCount) {
  auto a = BuildPrompts(Spec(50, 8), 3);
  auto b = BuildPrompts(Spec(50, 8), 10);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a->Get(i).token_ids, b->Get(i).token_ids);
  v1::DatasetSpec other = Spec(50, 8);
  other.set_seed(43);
  EXPECT_NE(BuildPrompts(other, 1)->Get(0).token_ids, a->Get(0).token_ids);
}

TEST(DatasetTest, RangesStayWithinBounds) {
  v1::DatasetSpec s = Spec(100, 20);
  s.set_input_tokens_range(10);
  s.set_output_tokens_range(5);
  auto prompts = BuildPrompts(s, 200);
  ASSERT_THAT(prompts, IsOk());
  bool varied = false;
  for (const Prompt& p : prompts->All()) {
    EXPECT_GE(p.token_ids.size(), 90u);
    EXPECT_LE(p.token_ids.size(), 110u);
    EXPECT_GE(p.output_tokens, 15);
    EXPECT_LE(p.output_tokens, 25);
    varied |= p.token_ids.size() != 100u;
  }
  EXPECT_TRUE(varied);
}

// A plan reads lengths through Shape, the run makes prompts through Get:
// they must agree, prompt by prompt, for every kind of set.
TEST(DatasetTest, ShapeGivesTheLengthsGetMakes) {
  v1::DatasetSpec s = Spec(100, 20, 0.5, 3);
  s.set_input_tokens_range(10);
  s.set_output_tokens_range(5);
  v1::WarmupSpec warmup;
  warmup.set_requests(4);
  for (auto set : {BuildPrompts(s, 50), BuildCacheSeedPrompts(s), BuildWarmupPrompts(s, warmup)}) {
    ASSERT_THAT(set, IsOk());
    ASSERT_FALSE(set->empty());
    for (size_t i = 0; i < set->size(); ++i) {
      Prompt p = set->Get(i);
      EXPECT_EQ(set->Shape(i).input_tokens, p.input_tokens()) << i;
      EXPECT_EQ(set->Shape(i).output_tokens, p.output_tokens) << i;
    }
  }
}

// Prompts are made when asked for, so a set far larger than memory costs
// only its group prefixes: 1,000,000 x 128K tokens would be 512 GB of ids.
TEST(DatasetTest, AHugeSetIsMadeOnlyWhenAskedFor) {
  auto prompts = BuildPrompts(Spec(128 * 1024, 16, 0.5, 2), 1000000);
  ASSERT_THAT(prompts, IsOk());
  EXPECT_EQ(prompts->size(), 1000000u);
  EXPECT_EQ(prompts->Shape(999999).input_tokens, 128 * 1024);
  EXPECT_EQ(prompts->Get(999999).token_ids.size(), 128u * 1024);
  EXPECT_EQ(prompts->Get(999999).prefix_group, 1);
}

TEST(DatasetTest, SharedPrefixGroupsReachTheRatio) {
  // 128K prompts with 90% shared inside each of 4 groups.
  auto prompts = BuildPrompts(Spec(128 * 1024, 16, 0.9, 4), 8);
  ASSERT_THAT(prompts, IsOk());
  const size_t prefix = static_cast<size_t>(std::lround(0.9 * 128 * 1024));
  for (int i = 0; i < 8; ++i) {
    const Prompt& p = prompts->Get(i);
    EXPECT_EQ(p.prefix_group, i % 4);
    EXPECT_EQ(p.prefix_tokens, static_cast<int32_t>(prefix));
    EXPECT_EQ(p.token_ids.size(), 128u * 1024);
  }
  EXPECT_GE(CommonPrefix(prompts->Get(0), prompts->Get(4)), prefix);  // Same group.
  EXPECT_LT(CommonPrefix(prompts->Get(0), prompts->Get(4)), prefix + 3);
  EXPECT_LT(CommonPrefix(prompts->Get(0), prompts->Get(1)), 3u);  // Different groups.
  auto seeds = BuildCacheSeedPrompts(Spec(128 * 1024, 16, 0.9, 4));
  ASSERT_THAT(seeds, IsOk());
  ASSERT_EQ(seeds->size(), 4u);
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(seeds->Get(g).output_tokens, 1);
    EXPECT_EQ(seeds->Get(g).input_tokens(), static_cast<int32_t>(prefix) + 16);  // No more.
    EXPECT_GE(CommonPrefix(seeds->Get(g), prompts->Get(g)), prefix);
    EXPECT_LT(CommonPrefix(seeds->Get(g), prompts->Get(g)), prefix + 3);
  }
  EXPECT_TRUE(BuildCacheSeedPrompts(Spec(100, 4))->empty());
}

TEST(DatasetTest, WarmupSharesNothingWithTheFormalSet) {
  v1::WarmupSpec warmup;
  warmup.set_requests(3);
  warmup.set_output_tokens(2);
  auto w = BuildWarmupPrompts(Spec(64, 16, 0.5, 1), warmup);
  ASSERT_THAT(w, IsOk());
  ASSERT_EQ(w->size(), 3u);
  auto formal = BuildPrompts(Spec(64, 16, 0.5, 1), 1);
  for (const Prompt& p : w->All()) {
    EXPECT_EQ(p.token_ids.size(), 64u);
    EXPECT_EQ(p.output_tokens, 2);
    EXPECT_LT(CommonPrefix(p, formal->Get(0)), 3u);
  }
}

TEST(DatasetTest, RejectsBadSpecsNamingTheField) {
  EXPECT_THAT(BuildPrompts(Spec(10, 0), 1), StatusIs(absl::StatusCode::kInvalidArgument,
                                                     HasSubstr("workload.dataset.output_tokens")));
  EXPECT_THAT(BuildPrompts(Spec(0, 4), 1), StatusIs(absl::StatusCode::kInvalidArgument,
                                                    HasSubstr("workload.dataset.input_tokens")));
  EXPECT_THAT(BuildPrompts(Spec(10, 4, 1.0), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("prefix_cache_ratio")));
  EXPECT_THAT(BuildPrompts(Spec(10, 4, -0.1), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("prefix_cache_ratio")));
  EXPECT_THAT(BuildPrompts(Spec(10, 4, 0.96), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no unique tokens")));
}

TEST(DatasetTest, ReadsAJsonlPromptFile) {
  servelab::testing::TempDir dir;
  std::string path = dir.File("prompts.jsonl");
  servelab::testing::WriteFile(path,
                               "{\"prompt\": [101, 102, 103], \"output_tokens\": 7}\n"
                               "\n"
                               "{\"prompt\": \"hello world\"}\n");
  v1::DatasetSpec s;
  s.set_output_tokens(5);
  s.mutable_file()->set_path(path);
  auto prompts = BuildPrompts(s, 3);
  ASSERT_THAT(prompts, IsOk());
  ASSERT_EQ(prompts->size(), 3u);
  EXPECT_EQ(prompts->Get(0).token_ids, (std::vector<int32_t>{101, 102, 103}));
  EXPECT_EQ(prompts->Get(0).output_tokens, 7);
  EXPECT_EQ(prompts->Get(1).text, "hello world");
  EXPECT_EQ(prompts->Get(1).output_tokens, 5);
  EXPECT_EQ(prompts->Get(2).token_ids, prompts->Get(0).token_ids);  // Repeats.
  servelab::testing::WriteFile(path, "{\"text\": 1}\n");
  EXPECT_THAT(BuildPrompts(s, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(":1: missing")));
  s.mutable_file()->set_path(dir.File("missing.jsonl"));
  EXPECT_THAT(BuildPrompts(s, 1),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.jsonl")));
}

}  // namespace
}  // namespace servelab::loadgen
