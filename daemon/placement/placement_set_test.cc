// PlacementSet without a Slurm cluster: local specs and processes, the
// allocation key, the proto round trip. tests/slurm/ covers Slurm for real.
#include "daemon/placement/placement_set.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace servelab::placement {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;

TEST(PlacementSetTest, LocalSpecsAndProcessesShareTheLocalPlacement) {
  PlacementSet set({});
  absl::StatusOr<Placement*> for_spec = set.ForSpec(v1::PlacementSpec());
  ASSERT_THAT(for_spec, IsOk());
  EXPECT_EQ((*for_spec)->Kind(), kLocalKind);
  absl::StatusOr<Placement*> for_process = set.ForProcess(v1::PlacedProcess());
  ASSERT_THAT(for_process, IsOk());
  EXPECT_EQ(*for_process, *for_spec);
  absl::StatusOr<std::vector<std::string>> ended = set.ReleaseUnused({});
  ASSERT_THAT(ended, IsOk());
  EXPECT_TRUE(ended->empty());
}

TEST(PlacementSetTest, AStoredSlurmProcessNeedsItsJob) {
  PlacementSet set({});
  v1::PlacedProcess placed;
  placed.set_kind(v1::PLACEMENT_KIND_SLURM);
  EXPECT_THAT(set.ForProcess(placed),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("job id")));
}

TEST(PlacementSetTest, TheAllocationKeyHoldsEveryAllocationField) {
  v1::SlurmPlacementSpec a;
  a.set_partition("gpu");
  a.set_gres("gpu:8");
  v1::SlurmPlacementSpec b = a;
  EXPECT_EQ(AllocationKey(a), AllocationKey(b));
  b.set_nodes(1);  // 0 means 1.
  EXPECT_EQ(AllocationKey(a), AllocationKey(b));
  b.set_nodes(2);
  EXPECT_NE(AllocationKey(a), AllocationKey(b));
  b = a;
  b.set_exclusive_steps(true);
  EXPECT_NE(AllocationKey(a), AllocationKey(b));
  b = a;
  b.set_account("llm");
  EXPECT_NE(AllocationKey(a), AllocationKey(b));
}

TEST(PlacementSetTest, SlurmOptionsFollowTheSpec) {
  v1::SlurmPlacementSpec spec;
  spec.set_partition("gpu");
  spec.set_account("llm");
  spec.set_gres("npu:16");
  spec.set_exclusive_steps(true);
  spec.set_device_gres("npu");
  SlurmOptions options = SlurmOptionsFor(spec, {.slurm_env = {{"SLURM_CONF", "/c"}}});
  EXPECT_EQ(options.partition, "gpu");
  EXPECT_EQ(options.account, "llm");
  EXPECT_EQ(options.nodes, 1);
  EXPECT_EQ(options.gres, "npu:16");
  EXPECT_EQ(options.sharing, StepSharing::kExclusive);
  EXPECT_EQ(options.device_gres, "npu");
  EXPECT_EQ(options.env.at("SLURM_CONF"), "/c");
}

TEST(PlacementSetTest, TheIdentityRoundTripsThroughTheProto) {
  PlacedProcess placed{kSlurmKind, 41, 77, "42", "42.3", "servelab-decode-00", "n1"};
  v1::PlacedProcess proto = ToProto(placed);
  EXPECT_EQ(proto.kind(), v1::PLACEMENT_KIND_SLURM);
  PlacedProcess back = FromProto(proto, 41, 77);
  EXPECT_EQ(back.kind, kSlurmKind);
  EXPECT_EQ(back.pid, 41);
  EXPECT_EQ(back.start_ticks, 77);
  EXPECT_EQ(back.step_id, "42.3");
  EXPECT_EQ(back.step_name, "servelab-decode-00");
  EXPECT_EQ(back.node, "n1");
  EXPECT_EQ(FromProto(v1::PlacedProcess(), 5, 6).kind, kLocalKind);
}

}  // namespace
}  // namespace servelab::placement
