#include "sim/prefix_cache.h"

#include <gtest/gtest.h>

#include <numeric>

namespace servelab::sim {
namespace {

std::vector<int64_t> Range(int64_t start, int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST(PrefixCacheTest, RepeatedPromptHitsAllButTheLastBlock) {
  PrefixCache cache(4, 100);
  std::vector<int64_t> p = Range(0, 10);  // 2 full blocks + 2 tokens
  EXPECT_EQ(cache.Lookup(p), 0);
  cache.Insert(p);
  EXPECT_EQ(cache.Lookup(p), 8);
  // Exactly block-aligned: the last token is recomputed, so one block less.
  std::vector<int64_t> q = Range(0, 8);
  EXPECT_EQ(cache.Lookup(q), 4);
}

TEST(PrefixCacheTest, OnlyTheCommonPrefixHits) {
  PrefixCache cache(4, 100);
  cache.Insert(Range(0, 16));
  std::vector<int64_t> p = Range(0, 16);
  p[9] = 999;  // third block differs
  EXPECT_EQ(cache.Lookup(p), 8);
  std::vector<int64_t> q = Range(0, 16);
  q[0] = 999;  // first block differs: later blocks cannot hit either
  EXPECT_EQ(cache.Lookup(q), 0);
}

TEST(PrefixCacheTest, EvictsLeastRecentlyUsed) {
  PrefixCache cache(2, 4);
  std::vector<int64_t> a = Range(0, 5), b = Range(100, 5), c = Range(200, 5);
  cache.Insert(a);                // 2 blocks
  cache.Insert(b);                // 2 blocks, full
  EXPECT_EQ(cache.Lookup(a), 4);  // a is now most recent
  cache.Insert(c);                // evicts b
  EXPECT_EQ(cache.size_blocks(), 4);
  EXPECT_EQ(cache.Lookup(b), 0);
  EXPECT_EQ(cache.Lookup(a), 4);
  EXPECT_EQ(cache.Lookup(c), 4);
}

TEST(PrefixCacheTest, ClearEmptiesIt) {
  PrefixCache cache(4, 100);
  cache.Insert(Range(0, 12));
  cache.Clear();
  EXPECT_EQ(cache.size_blocks(), 0);
  EXPECT_EQ(cache.Lookup(Range(0, 12)), 0);
}

}  // namespace
}  // namespace servelab::sim
