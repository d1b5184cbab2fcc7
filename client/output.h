// Printing of API messages for people (text) and programs (JSON).
//
// JSON is protobuf's JSON mapping with the proto field names (snake_case),
// enum names, and every primitive field present even when zero or empty, so
// that a script can rely on e.g. `base_id` and `changes` being there.
//
// Text puts the facts first (docs/design.md §12): state, current stage and for how
// long, formal requests sent/planned, blocker, changes against the base;
// then the plan; then the failure class and what resume would do.
//
// Pure functions of their arguments (`now` is passed in); thread-compatible.
#ifndef SERVELAB_CLIENT_OUTPUT_H_
#define SERVELAB_CLIENT_OUTPUT_H_

#include <google/protobuf/message.h>

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/labels.h"
#include "servelab/v1/experiment.pb.h"
#include "servelab/v1/service.pb.h"

namespace servelab::client {

// Pretty (multi-line) or compact (one line, for streams of updates).
std::string ToJson(const google::protobuf::Message& message, bool pretty);

// Summary.next_step in CLI words: "it runs next: servelab wait exp-3 --until sent".
std::string FormatNextStep(const v1::NextStep& next);

// `servelab status`: the whole experiment, facts first.
std::string FormatExperiment(const v1::Experiment& experiment, absl::Time now);
// `servelab compare`: the experiments side by side — state, the frozen-spec
// fields that differ from the first one's (with each one's value), and the
// results of both windows with each decision.
std::string FormatComparison(const std::vector<v1::Experiment>& experiments);
// `servelab list`: a header and one line per experiment.
std::string FormatExperimentList(const v1::ListExperimentsResponse& list);
// `servelab watch`: one line per update.
std::string FormatWatchLine(const v1::Experiment& experiment, absl::Time now);
// `servelab wait` / `watch` on a terminal: one line redrawn in place —
// "exp-3 running formal_load 512/2000 sent, 480 completed, 0 failed,
// elapsed 12s, eta 35s". The ETA extrapolates the formal load's completion
// rate since its first request; "eta -" before there is one.
std::string FormatLiveProgress(const v1::Experiment& experiment, absl::Time now);
// `servelab summary`.
std::string FormatSummary(const v1::Summary& summary);
// The "hot deployment" row and one line per side holding devices.
std::string FormatHotDeployment(const v1::HotDeployment& hot);

}  // namespace servelab::client

#endif  // SERVELAB_CLIENT_OUTPUT_H_
