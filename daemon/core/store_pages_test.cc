#include "daemon/core/store_pages.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/core/testing/fake_store.h"
#include "tests/testing/status_matchers.h"

namespace servelab::core {
namespace {

using servelab::core::testing::FakeStore;
using servelab::testing::IsOk;
using servelab::testing::StatusIs;
using ::testing::Each;
using ::testing::ElementsAre;

// A FakeStore whose n-th listing fails.
class FlakyListingStore : public FakeStore {
 public:
  absl::StatusOr<std::vector<v1::Experiment>> ListExperiments(
      const ExperimentFilter& filter) override {
    if (static_cast<int>(listing_limits().size()) + 1 == fail_listing) {
      return absl::UnavailableError("busy");
    }
    return FakeStore::ListExperiments(filter);
  }
  int fail_listing = 0;  // 1-based; 0: none fails.
};

// exp-1 .. exp-N, odd ones in scenario "a", even ones in "b".
void Fill(FakeStore& store, int n) {
  for (int i = 1; i <= n; ++i) {
    v1::Experiment e;
    e.mutable_spec()->set_scenario(i % 2 == 1 ? "a" : "b");
    e.set_state(v1::EXPERIMENT_STATE_SUCCEEDED);
    ASSERT_THAT(store.CreateExperiment(e, Event{.kind = "submitted"}).status(), IsOk());
  }
}

TEST(StorePagesTest, VisitsEveryMatchInOrderOnePageAtATime) {
  FlakyListingStore store;
  Fill(store, 3 * kExperimentPage + 5);
  std::vector<std::string> seen;
  ASSERT_THAT(ForEachExperiment(store, {.scenario = "a", .limit = 1},
                                [&](const v1::Experiment& e) {
                                  seen.push_back(e.id());
                                  return true;
                                }),
              IsOk());
  // The caller's limit is ignored: the walk is the whole match.
  ASSERT_EQ(seen.size(), static_cast<size_t>((3 * kExperimentPage + 5 + 1) / 2));
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], absl::StrCat("exp-", 2 * i + 1));
  // Never the whole history in one listing.
  EXPECT_THAT(store.listing_limits(), Each(kExperimentPage));
  EXPECT_EQ(store.listing_limits().size(), 2u);
}

TEST(StorePagesTest, StopsWhenTheVisitorSaysSoAndWalksNewestFirst) {
  FlakyListingStore store;
  Fill(store, 2 * kExperimentPage);
  std::vector<std::string> seen;
  ASSERT_THAT(ForEachExperiment(store, {.newest_first = true},
                                [&](const v1::Experiment& e) {
                                  seen.push_back(e.id());
                                  return seen.size() < 3;
                                }),
              IsOk());
  EXPECT_THAT(seen, ElementsAre(absl::StrCat("exp-", 2 * kExperimentPage),
                                absl::StrCat("exp-", 2 * kExperimentPage - 1),
                                absl::StrCat("exp-", 2 * kExperimentPage - 2)));
  EXPECT_EQ(store.listing_limits().size(), 1u);
}

TEST(StorePagesTest, AnEmptyStoreVisitsNothing) {
  FlakyListingStore store;
  int visits = 0;
  ASSERT_THAT(ForEachExperiment(store, {}, [&](const v1::Experiment&) { return ++visits > 0; }),
              IsOk());
  EXPECT_EQ(visits, 0);
}

TEST(StorePagesTest, AStoreErrorMidWalkIsReturned) {
  FlakyListingStore store;
  Fill(store, 2 * kExperimentPage + 1);
  store.fail_listing = 2;
  int visits = 0;
  EXPECT_THAT(ForEachExperiment(store, {}, [&](const v1::Experiment&) { return ++visits > 0; }),
              StatusIs(absl::StatusCode::kUnavailable, ::testing::_));
  EXPECT_EQ(visits, kExperimentPage);
}

}  // namespace
}  // namespace servelab::core
