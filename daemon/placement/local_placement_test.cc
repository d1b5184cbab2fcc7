#include "daemon/placement/local_placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::placement {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::servelab::testing::TempDir;
using ::servelab::testing::WaitFor;
using ::testing::HasSubstr;

// An OK StatusOr holding `value`.
MATCHER_P(IsOkAnd, value, "") {
  if (!arg.ok()) {
    *result_listener << arg.status();
    return false;
  }
  return *arg == value;
}

TEST(LocalPlacementTest, SpawnsProbesAndStopsAProcessAnotherPlacementCanAdopt) {
  TempDir dir;
  LocalPlacement placement;
  absl::StatusOr<PlacedProcess> placed =
      placement.Spawn({.argv = {"/bin/sleep", "300"}, .log_path = dir.File("logs/sleep.log")});
  ASSERT_THAT(placed, IsOk());
  EXPECT_EQ(placed->kind, kLocalKind);
  EXPECT_GT(placed->pid, 0);
  EXPECT_EQ(placed->node, "localhost");
  EXPECT_THAT(placement.Alive(*placed), IsOkAnd(true));
  EXPECT_EQ(*placement.Address(*placed), "127.0.0.1");

  // As after a daemon restart: only the stored identity is known.
  LocalPlacement restarted;
  EXPECT_THAT(restarted.Alive(*placed), IsOkAnd(true));
  PlacedProcess recycled = *placed;
  recycled.start_ticks += 1;
  EXPECT_THAT(restarted.Alive(recycled), IsOkAnd(false));

  EXPECT_THAT(restarted.Stop(*placed, absl::Seconds(5)), IsOk());
  EXPECT_THAT(placement.Alive(*placed), IsOkAnd(false));
  EXPECT_THAT(placement.Stop(*placed, absl::Seconds(1)), IsOk());
}

TEST(LocalPlacementTest, WritesTheLogAndPassesTheEnvironment) {
  TempDir dir;
  LocalPlacement placement;
  absl::StatusOr<PlacedProcess> placed = placement.Spawn(
      {.argv = {"/usr/bin/env"}, .env = {{"SERVELAB_X", "a,b"}}, .log_path = dir.File("env.log")});
  ASSERT_THAT(placed, IsOk());
  ASSERT_TRUE(WaitFor([&] { return !*placement.Alive(*placed); }, absl::Seconds(10)));
  EXPECT_THAT(servelab::testing::ReadFile(dir.File("env.log")), HasSubstr("SERVELAB_X=a,b\n"));
}

TEST(LocalPlacementTest, RejectsOtherNodesAndOtherKinds) {
  TempDir dir;
  LocalPlacement placement;
  EXPECT_THAT(placement.Spawn({.argv = {"/bin/true"}, .log_path = dir.File("l"), .node = "n1"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n1")));
  EXPECT_THAT(placement.Spawn({.argv = {"true"}, .log_path = dir.File("l")}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("absolute")));
  PlacedProcess step{.kind = kSlurmKind, .step_id = "4.0"};
  EXPECT_THAT(placement.Alive(step),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("slurm")));
  EXPECT_THAT(placement.Stop(step, absl::Seconds(1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("slurm")));
}

}  // namespace
}  // namespace servelab::placement
