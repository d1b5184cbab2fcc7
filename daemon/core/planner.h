// The planner: decides, per stage, whether an experiment must RUN it, can
// REUSE what the hot deployment already holds, or SKIP it — by comparing the
// new spec's fingerprints with the hot deployment's (what the accelerators
// actually hold), not with the parent's.
//
//   v1::Plan plan = MakePlan({.spec = frozen.spec, .hot = hot, .history = history});
//
// Pure function; no I/O.
#ifndef SERVELAB_DAEMON_CORE_PLANNER_H_
#define SERVELAB_DAEMON_CORE_PLANNER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "servelab/v1/experiment.pb.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::core {

// What is running now. A side without an instance has an empty fingerprint.
struct HotDeployment {
  std::string experiment_id;      // Whose spec the instances hold.
  v1::Fingerprints fingerprints;  // Per running side; warmup = how it was warmed.
  bool warm = false;              // Warmup finished since the last launch.
};

// An analysis-only delta on a finished experiment re-analyzes its raw records.
struct ReanalysisSource {
  std::string experiment_id;
};

// An import: the experiment's own records were measured by another tool.
struct ImportedSource {
  std::string tool;
};

struct PlanInput {
  const v1::ExperimentSpec& spec;  // Frozen.
  std::optional<HotDeployment> hot;
  std::optional<ReanalysisSource> reanalysis;
  std::optional<ImportedSource> imported;
  // Mean past duration of each stage when it ran, for the prediction.
  std::map<v1::StageName, absl::Duration> history;
};

v1::Plan MakePlan(const PlanInput& input);

// First 8 hex digits: enough to tell fingerprints apart in a reason line.
std::string ShortHash(const std::string& hash);

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_PLANNER_H_
