// Many clients at once against one daemon (issue 10, R6): 8 clients each
// submit 50 experiments through the real CLI, concurrently — bases and
// deltas, some cancelled right away, some failing their analysis and resumed
// afterwards. Then: no experiment lost or duplicated, ids unique, every one
// final in the state its client's actions call for, the lane ran them in
// submission order, the decode sim's witness shows no two formal loads
// overlapping, and the store passes PRAGMA integrity_check.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/time_util.h"
#include "servelab/v1/experiment.pb.h"
#include "tests/testing/sanitizer.h"
#include "tests/workflow/daemon_fixture.h"
#include "yaml-cpp/yaml.h"

namespace servelab {
namespace {

using google::protobuf::util::TimeUtil;
using testing::RunResult;
using testing::SourcePath;

constexpr int kClients = 8;
constexpr int kSubmissionsEach = 50;

// What a client did with one submission, and so what its final state must be.
enum class Action { kRun, kCancel, kFailAnalysisThenResume };

struct Submitted {
  std::string id;
  Action action = Action::kRun;
  bool cancel_accepted = false;  // `servelab cancel` exited 0.
};

class ConcurrentClientsTest : public DaemonFixture {
 protected:
  // The id a `servelab -o json submit` printed; empty (and a failure) if none.
  static std::string IdOf(const RunResult& r) {
    const size_t at = r.out.find("\"id\": \"");
    if (r.exit_code != 0 || at == std::string::npos) {
      ADD_FAILURE() << "submit failed (" << r.exit_code << "): " << r.err;
      return "";
    }
    const size_t begin = at + 7;
    return r.out.substr(begin, r.out.find('"', begin) - begin);
  }

  static int Number(const std::string& id) {
    int n = 0;
    EXPECT_TRUE(absl::SimpleAtoi(absl::StripPrefix(id, "exp-"), &n)) << id;
    return n;
  }

  // One client: 50 submissions of a mix decided by `seed`, each against the
  // base or an earlier experiment of its own; returns what it did.
  std::vector<Submitted> RunClient(int client, const std::string& base) {
    std::mt19937 random(1000 + client);
    std::vector<Submitted> done;
    std::vector<std::string> mine = {base};
    for (int i = 0; i < kSubmissionsEach; ++i) {
      Submitted s;
      std::vector<std::string> args = {"-o", "json", "submit"};
      if (i % 10 == 0) {
        // A base from the file, in its own scenario: same deployment, reused.
        args.insert(args.end(), kSmall.begin(), kSmall.end());
        args.insert(args.end(), {"--set", absl::StrCat("scenario=client-", client)});
      } else {
        // A dataset seed of its own: a delta that changed only analysis
        // fields (its concurrency drawn equal to its base's) would re-analyze
        // the base's records and send no load, which is not what is tested.
        args.insert(args.end(),
                    {"--base", mine[random() % mine.size()], "--set",
                     absl::StrCat("workload.concurrency=", 4 + random() % 5), "--set",
                     absl::StrCat("workload.dataset.seed=", 100000 + 1000 * client + i)});
      }
      if (i % 10 == 7) {
        s.action = Action::kFailAnalysisThenResume;
        args.insert(args.end(), {"--set", "analysis.decision.metric=no_such_metric"});
      } else if (i % 10 == 3) {
        s.action = Action::kCancel;
      }
      s.id = IdOf(Cli(args));
      if (s.id.empty()) continue;
      if (s.action == Action::kCancel) s.cancel_accepted = Cli({"cancel", s.id}).exit_code == 0;
      if (s.action == Action::kRun) mine.push_back(s.id);
      done.push_back(s);
    }
    // Resumes come after the client's own submissions: each waits its turn.
    for (const Submitted& s : done) {
      if (s.action != Action::kFailAnalysisThenResume) continue;
      RunResult failed = Cli({"wait", s.id, "--until", "done", "--timeout",
                              absl::StrCat(300 * testing::kSanitizerTimeFactor, "s")});
      EXPECT_EQ(failed.exit_code, 8) << s.id << " was to fail its analysis: " << failed.err;
      RunResult resumed =
          Cli({"resume", s.id, "--set", "analysis.decision.metric=output_tokens_per_second"});
      EXPECT_EQ(resumed.exit_code, 0) << s.id << ": " << resumed.err;
    }
    return done;
  }

  // The demo spec at a size where the lane, not the load, is what is tested.
  const std::vector<std::string> kSmall = {"-f",    SourcePath("deploy/examples/pd-quick.yaml"),
                                           "--set", "workload.num_requests=8",
                                           "--set", "workload.dataset.input_tokens=1024",
                                           "--set", "workload.dataset.output_tokens=16"};
};

TEST_F(ConcurrentClientsTest, EightClientsFiftySubmissionsEachNothingLostNothingOverlaps) {
  DaemonFixture::StartDaemon({"--sim-time-scale", "0.05"});
  v1::Experiment base = WaitFinal(Submit(kSmall));
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();

  std::mutex mu;
  std::vector<Submitted> all;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      std::vector<Submitted> done = RunClient(c, base.id());
      std::lock_guard<std::mutex> lock(mu);
      all.insert(all.end(), done.begin(), done.end());
    });
  }
  for (std::thread& t : clients) t.join();
  ASSERT_EQ(all.size(), static_cast<size_t>(kClients * kSubmissionsEach));

  // Unique ids, and the daemon holds exactly these plus the base.
  std::set<std::string> ids;
  for (const Submitted& s : all) EXPECT_TRUE(ids.insert(s.id).second) << "duplicate " << s.id;
  std::map<int, v1::Experiment> final_by_number;
  int cancelled = 0, resumed = 0;
  for (const Submitted& s : all) {
    v1::Experiment e = WaitFinal(s.id);
    SCOPED_TRACE(s.id);
    if (s.action == Action::kCancel && s.cancel_accepted) {
      EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_CANCELLED) << e.blocker();
      ++cancelled;
      continue;
    }
    EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
    if (s.action == Action::kFailAnalysisThenResume) {
      ++resumed;
      EXPECT_EQ(Counter(e, v1::STAGE_FORMAL_LOAD, "attempt"), 1) << "resume re-sent the load";
    }
    final_by_number[Number(s.id)] = e;
  }
  RunResult count = testing::Run(
      {"/usr/bin/sqlite3", state_dir_ + "/servelab.db", "SELECT count(*) FROM experiments"});
  EXPECT_EQ(count.out, absl::StrCat(1 + kClients * kSubmissionsEach, "\n")) << count.err;

  // The lane ran the formal loads in submission (id) order.
  int64_t previous_start = 0;
  std::string previous_id;
  for (const auto& [number, e] : final_by_number) {
    const int64_t start =
        TimeUtil::TimestampToNanoseconds(StageOf(e, v1::STAGE_FORMAL_LOAD).started_at());
    EXPECT_GT(start, previous_start) << e.id() << " ran its load before " << previous_id;
    previous_start = start;
    previous_id = e.id();
  }

  // The decode sim's witness: no two formal loads overlapped.
  const int decode_port = Counter(base, v1::STAGE_LAUNCH_DECODE, "port");
  YAML::Node loads = YAML::Load(HttpBody(decode_port, "/debug/loads"))["loads"];
  std::vector<std::pair<double, double>> spans;
  for (const auto& load : loads) {
    if (load.first.as<std::string>().find("/formal/") == std::string::npos) continue;
    spans.emplace_back(load.second["first_arrival_unix"].as<double>(),
                       load.second["last_completion_unix"].as<double>());
  }
  std::sort(spans.begin(), spans.end());
  // Every succeeded one and the base; a load cancelled midway is there too.
  EXPECT_GE(spans.size(), final_by_number.size() + 1);
  for (size_t i = 1; i < spans.size(); ++i) {
    EXPECT_LT(spans[i - 1].second, spans[i].first) << "formal loads " << i - 1 << " and " << i;
  }

  RunResult integrity =
      testing::Run({"/usr/bin/sqlite3", state_dir_ + "/servelab.db", "PRAGMA integrity_check"});
  EXPECT_EQ(integrity.out, "ok\n") << integrity.err;
  std::printf("%d clients x %d submissions: %zu succeeded, %d cancelled, %d resumed\n", kClients,
              kSubmissionsEach, final_by_number.size(), cancelled, resumed);
}

}  // namespace
}  // namespace servelab
