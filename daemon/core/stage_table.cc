#include "daemon/core/stage_table.h"

#include <algorithm>

namespace servelab::core {
namespace {

template <v1::Side side>
absl::StatusOr<Counters> Launch(StageEnv& env, const v1::Experiment& e) {
  return LaunchSide(env, e, side);
}

}  // namespace

const std::vector<StageInfo>& StageTable() {
  using enum Worker;
  using enum StagePhase;
  static const auto* table = new std::vector<StageInfo>{
      {v1::STAGE_FREEZE, kSubmit, kPrepare, v1::SIDE_UNSPECIFIED, nullptr},
      {v1::STAGE_PREFLIGHT, kCpu, kPrepare, v1::SIDE_UNSPECIFIED, &Preflight},
      {v1::STAGE_LAUNCH_PREFILL, kLane, kPrepare, v1::SIDE_PREFILL, &Launch<v1::SIDE_PREFILL>},
      {v1::STAGE_LAUNCH_DECODE, kLane, kPrepare, v1::SIDE_DECODE, &Launch<v1::SIDE_DECODE>},
      {v1::STAGE_LAUNCH_ROUTER, kLane, kPrepare, v1::SIDE_ROUTER, &Launch<v1::SIDE_ROUTER>},
      {v1::STAGE_WARMUP, kLane, kPrepare, v1::SIDE_UNSPECIFIED, &Warmup},
      {v1::STAGE_ROUTE_VERIFY, kLane, kPrepare, v1::SIDE_UNSPECIFIED, &RouteVerify},
      {v1::STAGE_CACHE_RESET, kLane, kPrepare, v1::SIDE_UNSPECIFIED, &CacheReset},
      {v1::STAGE_CACHE_SEED, kLane, kPrepare, v1::SIDE_UNSPECIFIED, &CacheSeed},
      {v1::STAGE_FORMAL_LOAD, kLane, kLoad, v1::SIDE_UNSPECIFIED, nullptr},
      {v1::STAGE_DRAIN_CONFIRM, kLane, kDrain, v1::SIDE_UNSPECIFIED, &DrainConfirmStage},
      {v1::STAGE_ANALYZE, kCpu, kAnalyze, v1::SIDE_UNSPECIFIED, nullptr},
      {v1::STAGE_DECIDE, kCpu, kAnalyze, v1::SIDE_UNSPECIFIED, nullptr},
  };
  return *table;
}

namespace {

std::vector<StageInfo>::const_iterator Find(v1::StageName name) {
  const std::vector<StageInfo>& table = StageTable();
  return std::find_if(table.begin(), table.end(),
                      [name](const StageInfo& info) { return info.name == name; });
}

}  // namespace

const StageInfo& StageInfoOf(v1::StageName name) {
  auto it = Find(name);
  return it != StageTable().end() ? *it : StageTable().front();
}

bool RunsAfter(v1::StageName a, v1::StageName b) { return Find(a) > Find(b); }

}  // namespace servelab::core
