#include "daemon/core/baseline_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "daemon/core/ledger.h"
#include "daemon/core/testing/fake_clock.h"
#include "daemon/core/testing/fake_store.h"
#include "tests/testing/status_matchers.h"

namespace servelab::core {
namespace {

using servelab::testing::IsOk;

class BaselineIndexTest : public ::testing::Test {
 protected:
  // Stores a succeeded experiment of `scenario` whose whole window has
  // `tps` output tok/s per device and a TTFT p99 of `ttft_p99`.
  std::string Succeeded(const std::string& scenario, double tps, double ttft_p99) {
    v1::Experiment e;
    e.mutable_spec()->set_scenario(scenario);
    e.set_state(v1::EXPERIMENT_STATE_RUNNING);
    absl::StatusOr<v1::Experiment> created = ledger_.Create(e, {"submitted", "test"});
    EXPECT_THAT(created.status(), IsOk());
    absl::StatusOr<v1::Experiment> done =
        ledger_.Update(created->id(), [&](v1::Experiment& x) -> absl::StatusOr<EventText> {
          v1::WindowResult& w = *x.mutable_result()->mutable_whole();
          w.set_output_tokens_per_second_per_device(tps);
          w.mutable_ttft()->set_p99(ttft_p99);
          x.set_state(v1::EXPERIMENT_STATE_SUCCEEDED);
          return EventText{"state", "running -> succeeded"};
        });
    EXPECT_THAT(done.status(), IsOk());
    return created->id();
  }

  std::string BestId(const std::string& scenario, const std::string& metric,
                     const std::string& exclude = "") {
    v1::DecisionRule rule;
    rule.set_metric(metric);
    absl::StatusOr<std::optional<v1::Experiment>> best = index_.Best(scenario, rule, exclude);
    EXPECT_THAT(best.status(), IsOk());
    return best.ok() && best->has_value() ? (*best)->id() : "";
  }

  testing::FakeStore store_;
  testing::FakeClock clock_;
  Ledger ledger_{store_, clock_};
  BaselineIndex index_{ledger_};
};

TEST_F(BaselineIndexTest, TheBestIsInTheMetricsBetterDirectionWithinTheScenario) {
  const std::string slow = Succeeded("chat", 100, 0.5);
  const std::string fast = Succeeded("chat", 300, 0.9);
  Succeeded("other", 900, 0.1);
  EXPECT_EQ(BestId("chat", "output_tokens_per_second_per_device"), fast);  // higher is better
  EXPECT_EQ(BestId("chat", "ttft.p99"), slow);                             // lower is better
  EXPECT_EQ(BestId("nothing-yet", "ttft.p99"), "");
}

TEST_F(BaselineIndexTest, ALaterSuccessMovesTheBestWithoutReadingTheHistoryAgain) {
  Succeeded("chat", 100, 0.5);
  EXPECT_NE(BestId("chat", "output_tokens_per_second_per_device"), "");
  const size_t listings = store_.listing_limits().size();
  const std::string better = Succeeded("chat", 200, 0.5);
  Succeeded("chat", 150, 0.5);
  EXPECT_EQ(BestId("chat", "output_tokens_per_second_per_device"), better);
  EXPECT_EQ(store_.listing_limits().size(), listings);
}

TEST_F(BaselineIndexTest, AnExperimentIsNeverItsOwnBaseline) {
  const std::string second = Succeeded("chat", 100, 0.5);
  const std::string first = Succeeded("chat", 300, 0.5);
  EXPECT_EQ(BestId("chat", "output_tokens_per_second_per_device", first), second);
  // And the index still knows the best for everyone else.
  EXPECT_EQ(BestId("chat", "output_tokens_per_second_per_device"), first);
}

TEST_F(BaselineIndexTest, APeerWithZeroForTheMetricLosesToAnyValue) {
  Succeeded("chat", 0, 0.5);
  const std::string some = Succeeded("chat", 50, 0.5);
  EXPECT_EQ(BestId("chat", "output_tokens_per_second_per_device"), some);
}

}  // namespace
}  // namespace servelab::core
