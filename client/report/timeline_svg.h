// The stage timeline of the HTML report: where an experiment's wall time
// went. One row per stage with a bar from started_at to ended_at, one row
// "unattributed" for every stretch no stage covers, so that every second is
// accounted for, and the load windows shaded across all rows.
//
//   std::string svg = RenderStageTimeline(experiment.stages(),
//                                         {{formal_start, formal_end, "formal window", "#2ca02c"}},
//                                         generated_at);
//
// Pure functions; thread-compatible.
#ifndef SERVELAB_CLIENT_REPORT_TIMELINE_SVG_H_
#define SERVELAB_CLIENT_REPORT_TIMELINE_SVG_H_

#include <google/protobuf/repeated_ptr_field.h>

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "servelab/v1/experiment.pb.h"

namespace servelab::client::report {

struct WallSpan {
  absl::Time start;
  absl::Time end;
};

// Where the wall time between the first stage start and the last stage end
// went. A stage without started_at has no span; a running one (no ended_at)
// lasts until `now`; a stage that ended without an end stamp lasts no time.
struct Attribution {
  bool any_stage = false;  // False: no stage has started; the rest is zero.
  WallSpan total;
  absl::Duration in_stages;  // The union of the stage spans.
  std::vector<WallSpan> gaps;
  absl::Duration unattributed;  // Sum of the gaps; in_stages + unattributed = total.
};

// The span of one stage (see Attribution); false when it has none.
bool StageWallSpan(const v1::Stage& stage, absl::Time now, WallSpan* span);

Attribution AttributeTime(const google::protobuf::RepeatedPtrField<v1::Stage>& stages,
                          absl::Time now);

// A wall-time range shaded across every row, e.g. the formal window.
struct WallBand {
  WallSpan span;
  std::string label;
  std::string color;
};

// <svg id="timeline">, with the attribution in its caption line.
std::string RenderStageTimeline(const google::protobuf::RepeatedPtrField<v1::Stage>& stages,
                                const std::vector<WallBand>& bands, absl::Time now);

// "12.35 s": the report's one form of a duration.
std::string FormatSeconds(absl::Duration d);

}  // namespace servelab::client::report

#endif  // SERVELAB_CLIENT_REPORT_TIMELINE_SVG_H_
