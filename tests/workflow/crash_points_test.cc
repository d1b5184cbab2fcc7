// Crash at every point (issue 10 R1): for each crash point servelabd has
// (common/crash_points.h, so a new point is covered without touching this
// file), a daemon on sims runs a base experiment and a concurrency delta,
// dies by SIGKILL at that point, and is restarted. Then:
//   - no experiment is lost, and each ends SUCCEEDED after at most one resume;
//   - no stage that had succeeded before the crash runs again;
//   - no formal load is sent more often than its experiment has attempts,
//     and no two formal loads overlap on the decode sim's witness;
//   - the only processes carrying this daemon's owner marker are the three
//     recorded instances: nothing started before the crash is left unowned;
//   - PRAGMA integrity_check is ok.
// Each point is its own test; each prints one "| point | outcome |" row.
#include "common/crash_points.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "servelab/v1/experiment.pb.h"
#include "servelab/v1/service.pb.h"
#include "tests/workflow/daemon_fixture.h"
#include "yaml-cpp/yaml.h"

namespace servelab {
namespace {

using google::protobuf::util::TimeUtil;
using testing::RunResult;
using testing::SourcePath;

// Session leaders whose environment marks them as started by the daemon of
// `state_dir` (SERVELAB_OWNER, daemon/placement/placement_set.h).
std::set<int> MarkedProcesses(const std::string& state_dir) {
  std::set<int> pids;
  const std::string wanted = "SERVELAB_OWNER=" + state_dir;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    char state = testing::ProcessState(pid);
    if (state == 0 || state == 'Z') continue;
    std::ifstream in(absl::StrCat("/proc/", pid, "/environ"), std::ios::binary);
    std::string variable;
    while (std::getline(in, variable, '\0')) {
      if (variable == wanted) {
        if (getsid(pid) == pid) pids.insert(pid);
        break;
      }
    }
  }
  return pids;
}

class CrashPointsTest : public DaemonFixture, public ::testing::WithParamInterface<std::string> {
 protected:
  void TearDown() override {
    DaemonFixture::TearDown();
    // Instances outlive the daemon by design; these belong to this test.
    for (int pid : MarkedProcesses(state_dir_)) kill(pid, SIGKILL);
  }

  void Start(const std::vector<std::string>& extra, const std::vector<std::string>& env) {
    std::vector<std::string> flags = {"--sim-time-scale", "0.02"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    StartDaemon(flags, env);
  }

  void Row(const std::string& outcome) {
    std::cout << "| " << GetParam() << " | " << outcome << " |" << std::endl;
  }
};

TEST_P(CrashPointsTest, LosesNothingAndRepeatsNothing) {
  const std::string point = GetParam();
  // Both experiments are stored before anything runs, so the crash can come
  // at any point of either.
  Start({"--paused"}, {});
  const std::string base =
      Submit({"-f", SourcePath("deploy/examples/pd-quick.yaml"), "--set",
              "workload.num_requests=24", "--set", "deployment.warmup.rounds=1"});
  const std::string delta = Submit({"--base", base, "--set", "workload.concurrency=8"});
  StopDaemon();

  // The lane starts before the address is written, so a point it reaches
  // first may kill the daemon before it serves.
  StartDaemonThatMayDie({"--sim-time-scale", "0.02"}, {"SERVELAB_CRASH_AT=" + point});
  const bool crashed = testing::WaitFor(
      [&] {
        // Asked without Parse's expectations: the daemon may die mid-call.
        RunResult r = Cli({"-o", "json", "status", delta});
        return !daemon_->Running() || absl::StrContains(r.out, "\"EXPERIMENT_STATE_SUCCEEDED\"");
      },
      absl::Seconds(90));
  ASSERT_TRUE(crashed) << "neither a crash nor the end within 90 s";
  const bool reached = !daemon_->Running();
  if (!reached) {
    StopDaemon();
  } else {
    EXPECT_EQ(daemon_->Wait(), 128 + SIGKILL);
    daemon_.reset();
  }

  Start({}, {});
  std::string outcome;
  std::map<std::string, std::map<v1::StageName, std::string>> done_before;
  for (const std::string& id : {base, delta}) {
    v1::Experiment e = Status(id);
    ASSERT_EQ(e.id(), id) << "lost " << id;
    for (const v1::Stage& s : e.stages()) {
      if (s.status() == v1::STAGE_STATUS_SUCCEEDED) {
        done_before[id][s.name()] = TimeUtil::ToString(s.ended_at());
      }
    }
  }
  std::vector<std::string> resumed;
  for (const std::string& id : {base, delta}) {
    v1::Experiment e = WaitFinal(id);
    if (e.state() == v1::EXPERIMENT_STATE_FAILED) {
      absl::StrAppend(&outcome, id, " ", v1::FailureClass_Name(e.failure_class()), ", resumed; ");
      RunResult resume = Cli({"resume", id});
      ASSERT_EQ(resume.exit_code, 0) << resume.err;
      resumed.push_back(id);
      e = WaitFinal(id);
    }
    ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << id << ": " << e.blocker();
    for (const v1::Stage& s : e.stages()) {
      // Analysis is a pure function of the stored records: re-analysis is
      // what resume of ANALYSIS_FAILED means. Device stages must not repeat.
      if (s.name() == v1::STAGE_ANALYZE || s.name() == v1::STAGE_DECIDE) continue;
      auto before = done_before[id].find(s.name());
      if (before == done_before[id].end()) continue;
      EXPECT_EQ(TimeUtil::ToString(s.ended_at()), before->second)
          << id << " " << v1::StageName_Name(s.name()) << " ran again after the crash";
    }
  }

  // Formal loads on the decode sim that serves now: at most one per attempt,
  // never two at once.
  const int decode_port = [&] {
    v1::Summary summary;
    RunResult r = Cli({"-o", "json", "summary"});
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;
    if (!google::protobuf::util::JsonStringToMessage(r.out, &summary, options).ok()) return -1;
    for (const v1::ServingInstance& i : summary.hot_deployment().instances()) {
      if (i.side() == v1::SIDE_DECODE) return i.port();
    }
    return -1;
  }();
  ASSERT_GT(decode_port, 0);
  YAML::Node loads = YAML::Load(HttpBody(decode_port, "/debug/loads"))["loads"];
  std::vector<std::pair<double, double>> windows;
  for (const auto& load : loads) {
    const std::string tag = load.first.as<std::string>();
    if (!absl::StrContains(tag, "/formal/")) continue;
    windows.emplace_back(load.second["first_arrival_unix"].as<double>(),
                         load.second["last_completion_unix"].as<double>());
    const std::string id = tag.substr(0, tag.find('/'));
    const int attempts = Counter(Status(id), v1::STAGE_FORMAL_LOAD, "attempt");
    const int attempt = std::stoi(tag.substr(tag.rfind('/') + 1));
    EXPECT_LE(attempt, std::max(attempts, 1)) << tag;
    const bool was_resumed = std::count(resumed.begin(), resumed.end(), id) > 0;
    if (!was_resumed) {
      EXPECT_EQ(attempt, 1) << tag << " sent again without a resume";
    }
  }
  std::sort(windows.begin(), windows.end());
  for (size_t i = 1; i < windows.size(); ++i) {
    EXPECT_LT(windows[i - 1].second, windows[i].first) << "formal loads overlap";
  }

  // Exactly the three recorded instances carry the marker.
  EXPECT_EQ(MarkedProcesses(state_dir_).size(), 3u) << "an instance is left unowned";

  RunResult integrity =
      testing::Run({"/usr/bin/sqlite3", state_dir_ + "/servelab.db", "PRAGMA integrity_check"});
  EXPECT_EQ(integrity.out, "ok\n") << integrity.err;
  if (!reached) {
    Row("not reached: both succeeded without passing it");
  } else {
    Row(outcome.empty() ? "crashed; nothing to resume, both succeeded" : "crashed; " + outcome);
  }
}

std::string PointName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name;
  for (char c : info.param) name.push_back(absl::ascii_isalnum(c) ? c : '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryPoint, CrashPointsTest, ::testing::ValuesIn(AllCrashPoints()),
                         PointName);

}  // namespace
}  // namespace servelab
