#include "sim/cost_model.h"

#include <gtest/gtest.h>

namespace servelab::sim {
namespace {

SimConfig TestConfig() {
  SimConfig c;
  c.prefill_overhead_seconds = 0.01;
  c.prefill_chunk_overhead_seconds = 0.001;
  c.prefill_seconds_per_token = 0.0001;
  c.prefill_batch_slowdown = 0.5;
  c.max_num_batched_tokens = 1000;
  c.decode_base_seconds = 0.02;
  c.decode_seconds_per_seq = 0.001;
  c.kv_transfer_overhead_seconds = 0.003;
  c.kv_transfer_seconds_per_token = 0.00001;
  return c;
}

TEST(CostModelTest, PrefillIsChunkedAndLinearInUncachedTokens) {
  SimConfig c = TestConfig();
  CostModel m(c);
  EXPECT_DOUBLE_EQ(m.PrefillSeconds(1000, 0), 0.01 + 1 * 0.001 + 1000 * 0.0001);
  EXPECT_DOUBLE_EQ(m.PrefillSeconds(2500, 0), 0.01 + 3 * 0.001 + 2500 * 0.0001);
  // A fully cached prompt still computes one token.
  EXPECT_DOUBLE_EQ(m.PrefillSeconds(0, 0), 0.01 + 0.001 + 0.0001);
}

TEST(CostModelTest, PrefillIsSlowerWhenBatched) {
  SimConfig c = TestConfig();
  CostModel m(c);
  EXPECT_DOUBLE_EQ(m.PrefillSeconds(1000, 2), 0.01 + 0.001 + 1000 * 0.0001 * 2.0);
  EXPECT_GT(m.PrefillSeconds(1000, 1), m.PrefillSeconds(1000, 0));
}

TEST(CostModelTest, DecodeStepGrowsWithRunningSequences) {
  SimConfig c = TestConfig();
  CostModel m(c);
  EXPECT_DOUBLE_EQ(m.DecodeStepSeconds(1), 0.021);
  EXPECT_DOUBLE_EQ(m.DecodeStepSeconds(100), 0.12);
}

TEST(CostModelTest, KvTransferPerToken) {
  SimConfig c = TestConfig();
  CostModel m(c);
  EXPECT_DOUBLE_EQ(m.KvTransferSeconds(1000), 0.003 + 0.01);
}

}  // namespace
}  // namespace servelab::sim
