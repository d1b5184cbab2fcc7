#include "client/report/timeline_svg.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace servelab::client::report {
namespace {

using ::testing::HasSubstr;

void AddStage(google::protobuf::RepeatedPtrField<v1::Stage>* stages, v1::StageStatus status,
              int64_t from, int64_t to) {
  v1::Stage* s = stages->Add();
  s->set_name(v1::STAGE_WARMUP);
  s->set_status(status);
  if (from > 0) s->mutable_started_at()->set_seconds(from);
  if (to > 0) s->mutable_ended_at()->set_seconds(to);
}

TEST(AttributeTimeTest, GapsBetweenUnionOfStages) {
  google::protobuf::RepeatedPtrField<v1::Stage> stages;
  AddStage(&stages, v1::STAGE_STATUS_SUCCEEDED, 100, 110);
  AddStage(&stages, v1::STAGE_STATUS_SUCCEEDED, 105, 112);  // Overlaps: counted once.
  AddStage(&stages, v1::STAGE_STATUS_SUCCEEDED, 115, 120);
  AddStage(&stages, v1::STAGE_STATUS_PENDING, 0, 0);    // Not started: no span.
  AddStage(&stages, v1::STAGE_STATUS_RUNNING, 125, 0);  // Runs until now.
  Attribution a = AttributeTime(stages, absl::FromUnixSeconds(130));
  ASSERT_TRUE(a.any_stage);
  EXPECT_EQ(a.total.start, absl::FromUnixSeconds(100));
  EXPECT_EQ(a.total.end, absl::FromUnixSeconds(130));
  ASSERT_EQ(a.gaps.size(), 2u);
  EXPECT_EQ(a.gaps[0].start, absl::FromUnixSeconds(112));
  EXPECT_EQ(a.gaps[1].end, absl::FromUnixSeconds(125));
  EXPECT_EQ(a.unattributed, absl::Seconds(8));
  EXPECT_EQ(a.in_stages, absl::Seconds(22));
}

TEST(AttributeTimeTest, NoStartedStage) {
  google::protobuf::RepeatedPtrField<v1::Stage> stages;
  AddStage(&stages, v1::STAGE_STATUS_PENDING, 0, 0);
  EXPECT_FALSE(AttributeTime(stages, absl::FromUnixSeconds(1)).any_stage);
  EXPECT_THAT(RenderStageTimeline(stages, {}, absl::FromUnixSeconds(1)),
              HasSubstr("no stage has started"));
}

TEST(RenderStageTimelineTest, RowsGapsAndBands) {
  google::protobuf::RepeatedPtrField<v1::Stage> stages;
  AddStage(&stages, v1::STAGE_STATUS_SUCCEEDED, 100, 110);
  AddStage(&stages, v1::STAGE_STATUS_FAILED, 112, 113);
  stages.Mutable(1)->set_error("<oops>");
  AddStage(&stages, v1::STAGE_STATUS_PENDING, 0, 0);
  std::vector<WallBand> bands = {
      {{absl::FromUnixSeconds(101), absl::FromUnixSeconds(109)}, "formal window", "#2ca02c"}};
  std::string svg = RenderStageTimeline(stages, bands, absl::FromUnixSeconds(200));
  EXPECT_THAT(svg, HasSubstr("<svg id=\"timeline\""));
  EXPECT_THAT(svg, HasSubstr("total 13.00 s = stages 11.00 s + unattributed 2.00 s"));
  EXPECT_THAT(svg, HasSubstr("warmup · unspecified · failed"));
  EXPECT_THAT(svg, HasSubstr("error: &lt;oops&gt;"));
  EXPECT_THAT(svg, HasSubstr("not started"));
  EXPECT_THAT(svg, HasSubstr("formal window 8.00 s"));
  EXPECT_THAT(svg, HasSubstr("class=\"gap\""));
}

}  // namespace
}  // namespace servelab::client::report
