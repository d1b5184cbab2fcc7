#include "storage/sqlite_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <ctime>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace servelab::storage {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

MATCHER_P(EqualsProto, expected, "") {
  google::protobuf::util::MessageDifferencer differ;
  std::string diff;
  differ.ReportDifferencesToString(&diff);
  if (differ.Compare(expected, arg)) return true;
  *result_listener << diff;
  return false;
}

google::protobuf::Timestamp Ts(int64_t seconds, int32_t nanos = 0) {
  google::protobuf::Timestamp ts;
  ts.set_seconds(seconds);
  ts.set_nanos(nanos);
  return ts;
}

v1::Experiment MakeExperiment(const std::string& scenario, const std::string& sha,
                              int concurrency = 64) {
  v1::Experiment e;
  e.mutable_spec()->set_scenario(scenario);
  e.mutable_spec()->mutable_workload()->set_num_requests(640);
  e.mutable_spec()->mutable_workload()->set_concurrency(concurrency);
  (*e.mutable_spec()->mutable_labels())["owner"] = "me";
  e.set_spec_sha256(sha);
  e.set_state(v1::EXPERIMENT_STATE_QUEUED);
  *e.mutable_submitted_at() = Ts(1'700'000'000, 123'456'789);
  *e.mutable_updated_at() = Ts(1'700'000'000, 123'456'789);
  auto* stage = e.add_stages();
  stage->set_name(v1::STAGE_FREEZE);
  stage->set_action(v1::STAGE_ACTION_RUN);
  stage->set_status(v1::STAGE_STATUS_SUCCEEDED);
  stage->set_attempt(1);
  *stage->mutable_started_at() = Ts(1'700'000'000);
  *stage->mutable_ended_at() = Ts(1'700'000'001, 5);
  (*stage->mutable_counters())["wall_seconds"] = 1.5;
  stage = e.add_stages();
  stage->set_name(v1::STAGE_FORMAL_LOAD);
  stage->set_action(v1::STAGE_ACTION_RUN);
  stage->set_status(v1::STAGE_STATUS_PENDING);
  auto* planned = e.mutable_plan()->add_stages();
  planned->set_stage(v1::STAGE_LAUNCH_PREFILL);
  planned->set_action(v1::STAGE_ACTION_REUSE);
  planned->set_reason("prefill fingerprint unchanged a1b2c3");
  e.mutable_progress()->set_formal_requests_planned(640);
  return e;
}

core::Event MakeEvent(const std::string& kind, const std::string& detail, int64_t unix_seconds) {
  core::Event event;
  event.kind = kind;
  event.detail = detail;
  event.at = absl::FromUnixSeconds(unix_seconds) + absl::Nanoseconds(17);
  return event;
}

v1::RequestRecord MakeRecord(const std::string& experiment_id, v1::Phase phase, int attempt,
                             int index) {
  v1::RequestRecord r;
  r.set_experiment_id(experiment_id);
  r.set_phase(phase);
  r.set_attempt(attempt);
  r.set_request_index(index);
  r.set_planned_send_ns(1000 * index);
  r.set_sent_ns(1000 * index + 7);
  r.set_first_token_ns(1000 * index + 500);
  r.set_end_ns(1000 * index + 900);
  for (int64_t c : {int64_t{600}, int64_t{700}, int64_t{1} << 40, int64_t{-3}}) {
    r.add_chunk_ns(1000 * index + c);
  }
  r.set_prompt_tokens(16384);
  r.set_completion_tokens(1024);
  r.set_cached_tokens(14000);
  r.set_http_status(200);
  r.set_requested_prompt_tokens(16384);
  r.set_requested_completion_tokens(1024);
  *r.mutable_load_start() = Ts(1'700'000'100, 42);
  r.set_queued_ns(333 + index);
  return r;
}

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    store_.reset();
    auto store = SqliteStore::Open(path_);
    ASSERT_THAT(store, IsOk());
    store_ = std::move(*store);
  }

  std::string Create(const v1::Experiment& e) {
    auto id = store_->CreateExperiment(e, MakeEvent("submitted", "queued", 1'700'000'000));
    EXPECT_THAT(id, IsOk());
    return id.value_or("");
  }

  std::vector<std::string> Ids(const core::ExperimentFilter& filter) {
    std::vector<std::string> ids;
    auto list = store_->ListExperiments(filter);
    EXPECT_THAT(list, IsOk());
    for (const auto& e : list.value_or(std::vector<v1::Experiment>{})) ids.push_back(e.id());
    return ids;
  }

  // A second connection of our own, to look at the file as another process would.
  int64_t RawInt(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    int64_t value = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : -1;
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return value;
  }

  // Runs `sql` on a writable connection of our own.
  void RawExec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error == nullptr ? "" : error);
    sqlite3_free(error);
    sqlite3_close(db);
  }

  // Column `column` of every row of `sql`, as text (NULL as ""), read the
  // same way.
  std::vector<std::string> RawColumn(const std::string& sql, int column = 0) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    std::vector<std::string> values;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt, column);
      values.emplace_back(text == nullptr ? "" : reinterpret_cast<const char*>(text));
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return values;
  }

  std::string RawText(const std::string& sql) {
    std::vector<std::string> rows = RawColumn(sql);
    return rows.empty() ? "" : rows.front();
  }

  // SQLite's plan for `sql`: its steps' details (column 3), joined.
  std::string QueryPlan(const std::string& sql) {
    return absl::StrJoin(RawColumn("EXPLAIN QUERY PLAN " + sql, 3), "; ");
  }

  testing::TempDir dir_;
  std::string path_ = dir_.File("servelab.db");
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(SqliteStoreTest, WalModeIsOn) {
  EXPECT_EQ(RawText("PRAGMA journal_mode"), "wal");
  EXPECT_TRUE(std::filesystem::exists(path_ + "-wal"));
}

TEST_F(SqliteStoreTest, CreateThenGetReturnsTheWholeExperiment) {
  v1::Experiment e = MakeExperiment("128k-cache90", "sha-a");
  e.mutable_result()->mutable_whole()->set_output_tokens_per_second(240.3715);
  *e.mutable_result()->mutable_computed_at() = Ts(1'700'000'500);
  std::string id = Create(e);
  EXPECT_EQ(id, "exp-1");

  auto got = store_->GetExperiment(id);
  ASSERT_THAT(got, IsOk());
  v1::Experiment expected = e;
  expected.set_id(id);
  EXPECT_THAT(*got, EqualsProto(expected));
  EXPECT_EQ(
      RawText("SELECT canonical_json FROM specs WHERE sha256 = 'sha-a'").find("128k-cache90") !=
          std::string::npos,
      true);
}

TEST_F(SqliteStoreTest, GetUnknownIdIsNotFound) {
  EXPECT_THAT(store_->GetExperiment("exp-9"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("exp-9")));
  EXPECT_THAT(store_->ListEvents("exp-9"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("")));
  EXPECT_THAT(store_->ListRequests("exp-9", v1::PHASE_FORMAL, 0),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("")));
}

TEST_F(SqliteStoreTest, CreateRequiresSpecHashAndKnownParent) {
  EXPECT_THAT(store_->CreateExperiment(MakeExperiment("s", ""), MakeEvent("submitted", "", 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec_sha256")));
  v1::Experiment orphan = MakeExperiment("s", "sha");
  orphan.set_base_id("exp-7");
  EXPECT_THAT(store_->CreateExperiment(orphan, MakeEvent("submitted", "", 1)),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("exp-7")));
  // Nothing was stored, and no id was consumed.
  EXPECT_THAT(Ids({}), IsEmpty());
  EXPECT_EQ(Create(MakeExperiment("s", "sha")), "exp-1");
}

TEST_F(SqliteStoreTest, ListPagesStartAfterAnIdAndStopAtTheLimit) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(Create(MakeExperiment(i % 2 ? "a" : "b", "sha-1")));
  EXPECT_THAT(Ids({.limit = 2}), ElementsAre(ids[0], ids[1]));
  EXPECT_THAT(Ids({.after_id = ids[1], .limit = 2}), ElementsAre(ids[2], ids[3]));
  EXPECT_THAT(Ids({.after_id = ids[3]}), ElementsAre(ids[4]));
  // The filter applies within the page: "b" is 0, 2, 4.
  EXPECT_THAT(Ids({.scenario = "b", .after_id = ids[0], .limit = 1}), ElementsAre(ids[2]));
  EXPECT_THAT(Ids({.after_id = ids[4]}), IsEmpty());
  EXPECT_THAT(Ids({.after_id = "exp-999"}), IsEmpty());
}

TEST_F(SqliteStoreTest, ListNewestFirstPagesBackwards) {
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(Create(MakeExperiment("a", "sha-1")));
  EXPECT_THAT(Ids({.limit = 2, .newest_first = true}), ElementsAre(ids[3], ids[2]));
  EXPECT_THAT(Ids({.after_id = ids[2], .newest_first = true}), ElementsAre(ids[1], ids[0]));
}

TEST_F(SqliteStoreTest, CountsPerStateAndFailureClassNameTheNewest) {
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(Create(MakeExperiment("a", "sha-1")));
  for (int i : {1, 3}) {
    v1::Experiment failed = *store_->GetExperiment(ids[i]);
    failed.set_state(v1::EXPERIMENT_STATE_FAILED);
    failed.set_failure_class(v1::LOAD_INTERRUPTED);
    ASSERT_THAT(store_->UpdateExperiment(failed, MakeEvent("state", "failed", 2)), IsOk());
  }
  auto counts = store_->CountExperiments();
  ASSERT_THAT(counts, IsOk());
  ASSERT_THAT(*counts, SizeIs(2));
  EXPECT_EQ((*counts)[0].state, v1::EXPERIMENT_STATE_QUEUED);
  EXPECT_EQ((*counts)[0].count, 2);
  EXPECT_EQ((*counts)[1].state, v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ((*counts)[1].failure_class, v1::LOAD_INTERRUPTED);
  EXPECT_EQ((*counts)[1].count, 2);
  EXPECT_EQ((*counts)[1].latest_id, ids[3]);
}

// The last experiment on the lane is the one whose formal load ended last,
// whatever the order of the ids (a resumed older experiment runs later).
TEST_F(SqliteStoreTest, LatestRunOfIsTheStageThatEndedLast) {
  auto latest = store_->LatestRunOf(v1::STAGE_FORMAL_LOAD, v1::STAGE_STATUS_SUCCEEDED);
  ASSERT_THAT(latest, IsOk());
  EXPECT_EQ(*latest, "");  // Nothing ran yet.
  auto ran = [&](int64_t ended_at_seconds) {
    v1::Experiment e = MakeExperiment("a", "sha-1");
    v1::Stage& formal = *e.mutable_stages(1);
    formal.set_status(v1::STAGE_STATUS_SUCCEEDED);
    *formal.mutable_started_at() = Ts(ended_at_seconds - 1);
    *formal.mutable_ended_at() = Ts(ended_at_seconds);
    return Create(e);
  };
  const std::string later = ran(1'700'000'050);
  ran(1'700'000'020);
  Create(MakeExperiment("a", "sha-1"));  // Pending: never on the lane.
  latest = store_->LatestRunOf(v1::STAGE_FORMAL_LOAD, v1::STAGE_STATUS_SUCCEEDED);
  ASSERT_THAT(latest, IsOk());
  EXPECT_EQ(*latest, later);
  latest = store_->LatestRunOf(v1::STAGE_FORMAL_LOAD, v1::STAGE_STATUS_FAILED);
  ASSERT_THAT(latest, IsOk());
  EXPECT_EQ(*latest, "");
}

TEST_F(SqliteStoreTest, MeanRecentStageDurationsAverageTheNewestRunsOnly) {
  // MakeExperiment's freeze stage ran 1 s; a newer one ran 3 s.
  Create(MakeExperiment("a", "sha-1"));
  v1::Experiment slower = MakeExperiment("a", "sha-1");
  *slower.mutable_stages(0)->mutable_started_at() = Ts(1'700'000'010);
  *slower.mutable_stages(0)->mutable_ended_at() = Ts(1'700'000'013);
  Create(slower);
  auto both = store_->MeanRecentStageDurations(20);
  ASSERT_THAT(both, IsOk());
  ASSERT_THAT(*both, SizeIs(1));  // formal_load is pending: not a run
  EXPECT_NEAR(absl::ToDoubleSeconds(both->at(v1::STAGE_FREEZE)), 2.0, 1e-6);
  auto newest = store_->MeanRecentStageDurations(1);
  ASSERT_THAT(newest, IsOk());
  EXPECT_EQ(newest->at(v1::STAGE_FREEZE), absl::Seconds(3));
}

// The outcome index holds finished stages only, and both of its queries
// still read through it rather than scan every stage row.
TEST_F(SqliteStoreTest, OnlyStagesThatEndedAreIndexedByOutcome) {
  Create(MakeExperiment("a", "sha-1"));
  EXPECT_THAT(RawText("SELECT sql FROM sqlite_master WHERE name = 'stages_by_outcome'"),
              HasSubstr("WHERE ended_at IS NOT NULL"));
  for (const char* query :
       {// MeanRecentStageDurations's and LatestRunOf's.
        "SELECT started_at, ended_at FROM stages WHERE name = ?1 AND action = ?2 AND "
        "status = ?3 AND ended_at IS NOT NULL AND started_at IS NOT NULL "
        "ORDER BY ended_at DESC LIMIT ?4",
        "SELECT experiment_id FROM stages WHERE name = ?1 AND action = ?2 AND "
        "status = ?3 AND ended_at IS NOT NULL ORDER BY ended_at DESC LIMIT 1"}) {
    EXPECT_THAT(QueryPlan(query), HasSubstr("USING INDEX stages_by_outcome")) << query;
  }
}

TEST_F(SqliteStoreTest, ListFiltersByScenarioAndStateOldestFirst) {
  std::string a = Create(MakeExperiment("16k", "sha-1"));
  std::string b = Create(MakeExperiment("128k-cache90", "sha-2"));
  v1::Experiment child = MakeExperiment("16k", "sha-3", 96);
  child.set_base_id(a);
  std::string c = Create(child);
  EXPECT_EQ(store_->GetExperiment(c)->base_id(), a);

  auto running = *store_->GetExperiment(c);
  running.set_state(v1::EXPERIMENT_STATE_RUNNING);
  ASSERT_THAT(store_->UpdateExperiment(running, MakeEvent("state", "QUEUED -> RUNNING", 2)),
              IsOk());

  EXPECT_THAT(Ids({}), ElementsAre(a, b, c));
  EXPECT_THAT(Ids({.scenario = "16k"}), ElementsAre(a, c));
  EXPECT_THAT(Ids({.scenario = "", .state = v1::EXPERIMENT_STATE_QUEUED}), ElementsAre(a, b));
  EXPECT_THAT(Ids({.scenario = "16k", .state = v1::EXPERIMENT_STATE_RUNNING}), ElementsAre(c));
  EXPECT_THAT(Ids({.scenario = "none"}), IsEmpty());
  // Listed experiments are complete, spec included.
  auto all = store_->ListExperiments({});
  ASSERT_THAT(all, IsOk());
  EXPECT_EQ((*all)[2].spec().workload().concurrency(), 96);
  EXPECT_THAT((*all)[2].stages(), SizeIs(2));
}

TEST_F(SqliteStoreTest, IdsIncreaseAndSurviveReopen) {
  EXPECT_EQ(Create(MakeExperiment("s", "sha")), "exp-1");
  EXPECT_EQ(Create(MakeExperiment("s", "sha")), "exp-2");
  Reopen();
  EXPECT_EQ(Create(MakeExperiment("s", "sha")), "exp-3");
  EXPECT_THAT(Ids({}), ElementsAre("exp-1", "exp-2", "exp-3"));
  // Same spec, one row.
  EXPECT_EQ(RawInt("SELECT count(*) FROM specs"), 1);
}

TEST_F(SqliteStoreTest, UpdateAppendsEventsInOrder) {
  std::string id = Create(MakeExperiment("s", "sha"));
  v1::Experiment e = *store_->GetExperiment(id);
  e.set_state(v1::EXPERIMENT_STATE_RUNNING);
  ASSERT_THAT(store_->UpdateExperiment(e, MakeEvent("state", "QUEUED -> RUNNING", 2)), IsOk());
  e.mutable_stages(1)->set_status(v1::STAGE_STATUS_RUNNING);
  e.mutable_progress()->set_formal_requests_sent(10);
  ASSERT_THAT(store_->UpdateExperiment(e, MakeEvent("stage", "formal_load RUNNING", 3)), IsOk());

  auto events = store_->ListEvents(id);
  ASSERT_THAT(events, IsOk());
  ASSERT_THAT(*events, SizeIs(3));
  EXPECT_EQ((*events)[0].kind, "submitted");
  EXPECT_EQ((*events)[1].kind, "state");
  EXPECT_EQ((*events)[1].detail, "QUEUED -> RUNNING");
  EXPECT_EQ((*events)[2].kind, "stage");
  EXPECT_LT((*events)[0].seq, (*events)[1].seq);
  EXPECT_LT((*events)[1].seq, (*events)[2].seq);
  for (const auto& event : *events) EXPECT_EQ(event.experiment_id, id);
  EXPECT_EQ((*events)[2].at, absl::FromUnixSeconds(3) + absl::Nanoseconds(17));

  auto got = store_->GetExperiment(id);
  ASSERT_THAT(got, IsOk());
  EXPECT_THAT(*got, EqualsProto(e));
}

TEST_F(SqliteStoreTest, UpdateRewritesStagesAndResult) {
  v1::Experiment e = MakeExperiment("s", "sha");
  e.mutable_result()->set_device_count(16);
  std::string id = Create(e);
  e = *store_->GetExperiment(id);
  e.clear_result();
  e.mutable_stages()->RemoveLast();
  e.add_stages()->set_name(v1::STAGE_ANALYZE);
  e.add_stages()->set_name(v1::STAGE_DECIDE);
  ASSERT_THAT(store_->UpdateExperiment(e, MakeEvent("stage", "", 2)), IsOk());
  auto got = store_->GetExperiment(id);
  ASSERT_THAT(got, IsOk());
  EXPECT_THAT(*got, EqualsProto(e));
  EXPECT_FALSE(got->has_result());
  EXPECT_EQ(RawInt("SELECT count(*) FROM stages"), 3);
}

// A stage transition writes the one row that changed: each row rewritten
// whole dirtied index pages of its own on a grown store (issue 9, P1).
// Triggers the test adds to the file log every write to stages and results.
TEST_F(SqliteStoreTest, UpdateWritesOnlyTheRowsThatChanged) {
  v1::Experiment e = MakeExperiment("s", "sha");
  for (const char* counter : {"a", "b", "c", "d", "e", "f"}) {
    (*e.mutable_stages(0)->mutable_counters())[counter] = 1;  // several map entries
  }
  e.add_stages()->set_name(v1::STAGE_ANALYZE);
  e.add_stages()->set_name(v1::STAGE_DECIDE);
  e.mutable_result()->set_device_count(16);
  std::string id = Create(e);
  RawExec(
      "CREATE TABLE writes (what TEXT);"
      "CREATE TRIGGER stage_insert AFTER INSERT ON stages BEGIN "
      "  INSERT INTO writes VALUES ('insert ' || NEW.position); END;"
      "CREATE TRIGGER stage_update AFTER UPDATE ON stages BEGIN "
      "  INSERT INTO writes VALUES ('update ' || NEW.position); END;"
      "CREATE TRIGGER stage_delete AFTER DELETE ON stages BEGIN "
      "  INSERT INTO writes VALUES ('delete ' || OLD.position); END;"
      "CREATE TRIGGER result_update AFTER UPDATE ON results BEGIN "
      "  INSERT INTO writes VALUES ('update result'); END;"
      "CREATE TRIGGER result_delete AFTER DELETE ON results BEGIN "
      "  INSERT INTO writes VALUES ('delete result'); END;");

  e = *store_->GetExperiment(id);  // parsed anew: the counters map may iterate in another order
  e.mutable_stages(1)->set_status(v1::STAGE_STATUS_RUNNING);
  *e.mutable_stages(1)->mutable_started_at() = Ts(1'700'000'002);
  ASSERT_THAT(store_->UpdateExperiment(e, MakeEvent("stage", "", 2)), IsOk());
  EXPECT_THAT(RawColumn("SELECT what FROM writes"), ElementsAre("update 1"));
  EXPECT_THAT(*store_->GetExperiment(id), EqualsProto(e));

  RawExec("DELETE FROM writes");
  e.mutable_stages()->RemoveLast();
  e.clear_result();
  ASSERT_THAT(store_->UpdateExperiment(e, MakeEvent("stage", "", 3)), IsOk());
  EXPECT_THAT(RawColumn("SELECT what FROM writes"), ElementsAre("delete 3", "delete result"));
  EXPECT_THAT(*store_->GetExperiment(id), EqualsProto(e));
  EXPECT_EQ(RawInt("SELECT count(*) FROM stages"), 3);
}

TEST_F(SqliteStoreTest, UpdateUnknownIdIsNotFound) {
  v1::Experiment e = MakeExperiment("s", "sha");
  e.set_id("exp-5");
  EXPECT_THAT(store_->UpdateExperiment(e, MakeEvent("state", "", 1)),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("exp-5")));
  EXPECT_EQ(RawInt("SELECT count(*) FROM events"), 0);
}

TEST_F(SqliteStoreTest, NewSpecOnUpdateAddsARowAndKeepsTheOld) {
  std::string id = Create(MakeExperiment("s", "sha-old", 64));
  v1::Experiment e = *store_->GetExperiment(id);
  e.mutable_spec()->mutable_limits();  // A resume delta froze a new spec.
  e.mutable_spec()->set_scenario("s");
  (*e.mutable_spec()->mutable_labels())["deadline"] = "longer";
  e.set_spec_sha256("sha-new");
  ASSERT_THAT(store_->UpdateExperiment(e, MakeEvent("spec", "sha-old -> sha-new", 2)), IsOk());
  auto got = store_->GetExperiment(id);
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(got->spec_sha256(), "sha-new");
  EXPECT_EQ(got->spec().labels().at("deadline"), "longer");
  EXPECT_EQ(RawInt("SELECT count(*) FROM specs"), 2);
  EXPECT_EQ(RawInt("SELECT count(*) FROM specs WHERE sha256 = 'sha-old'"), 1);
}

TEST_F(SqliteStoreTest, FailedUpdateWritesNeitherStateNorEvent) {
  std::string id = Create(MakeExperiment("s", "sha"));
  store_->SetFailpointForTesting([](std::string_view point) {
    return point == "update" ? absl::InternalError("injected") : absl::OkStatus();
  });
  v1::Experiment e = *store_->GetExperiment(id);
  e.set_state(v1::EXPERIMENT_STATE_FAILED);
  e.set_failure_class(v1::WARM_RESUMABLE);
  e.clear_stages();
  e.set_spec_sha256("sha-2");
  EXPECT_THAT(store_->UpdateExperiment(e, MakeEvent("state", "RUNNING -> FAILED", 2)),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("injected")));

  auto got = store_->GetExperiment(id);
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(got->state(), v1::EXPERIMENT_STATE_QUEUED);
  EXPECT_EQ(got->failure_class(), v1::FAILURE_CLASS_UNSPECIFIED);
  EXPECT_THAT(got->stages(), SizeIs(2));
  EXPECT_THAT(*store_->ListEvents(id), SizeIs(1));
  EXPECT_EQ(RawInt("SELECT count(*) FROM specs"), 1);

  // The store is usable afterwards.
  store_->SetFailpointForTesting(nullptr);
  EXPECT_THAT(store_->UpdateExperiment(e, MakeEvent("state", "RUNNING -> FAILED", 2)), IsOk());
  EXPECT_THAT(*store_->ListEvents(id), SizeIs(2));
}

// Status and list read on their own connection: they never wait for a write
// in progress (a batch of request records and its fsync, during a load), and
// they see the last commit, not the write under way. The failpoint runs
// inside UpdateExperiment's transaction, with the writer's lock held.
TEST_F(SqliteStoreTest, ReadsDoNotWaitForAWriteInProgressAndSeeTheLastCommit) {
  std::string id = Create(MakeExperiment("s", "sha"));
  v1::ExperimentState seen = v1::EXPERIMENT_STATE_UNSPECIFIED;
  size_t listed = 0;
  store_->SetFailpointForTesting([&](std::string_view point) {
    if (point != "update") return absl::OkStatus();
    absl::StatusOr<v1::Experiment> during = store_->GetExperiment(id);
    if (!during.ok()) return during.status();
    seen = during->state();
    absl::StatusOr<std::vector<v1::Experiment>> list = store_->ListExperiments({});
    if (!list.ok()) return list.status();
    listed = list->size();
    return absl::OkStatus();
  });
  v1::Experiment e = *store_->GetExperiment(id);
  e.set_state(v1::EXPERIMENT_STATE_RUNNING);
  ASSERT_THAT(store_->UpdateExperiment(e, MakeEvent("state", "QUEUED -> RUNNING", 2)), IsOk());
  EXPECT_EQ(seen, v1::EXPERIMENT_STATE_QUEUED);
  EXPECT_EQ(listed, 1u);
  EXPECT_EQ(store_->GetExperiment(id)->state(), v1::EXPERIMENT_STATE_RUNNING);
}

TEST_F(SqliteStoreTest, FailedCreateWritesNothing) {
  store_->SetFailpointForTesting(
      [](std::string_view point) { return absl::UnavailableError("injected"); });
  EXPECT_THAT(store_->CreateExperiment(MakeExperiment("s", "sha"), MakeEvent("submitted", "", 1)),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("injected")));
  for (const char* table : {"experiments", "specs", "stages", "events"}) {
    EXPECT_EQ(RawInt(std::string("SELECT count(*) FROM ") + table), 0) << table;
  }
}

TEST_F(SqliteStoreTest, ReopenKeepsEverything) {
  v1::Experiment e = MakeExperiment("s", "sha");
  e.mutable_result()->set_device_count(16);
  std::string id = Create(e);
  e.set_id(id);
  ASSERT_THAT(
      store_->AppendRequests({MakeRecord(id, v1::PHASE_FORMAL, 1, 0)}, core::Durability::kSynced),
      IsOk());
  v1::ServingInstance instance;
  instance.set_side(v1::SIDE_DECODE);
  instance.set_pid(4242);
  ASSERT_THAT(store_->PutInstance(instance), IsOk());

  Reopen();
  auto got = store_->GetExperiment(id);
  ASSERT_THAT(got, IsOk());
  EXPECT_THAT(*got, EqualsProto(e));
  EXPECT_THAT(*store_->ListEvents(id), SizeIs(1));
  EXPECT_THAT(*store_->ListRequests(id, v1::PHASE_FORMAL, 0), SizeIs(1));
  EXPECT_THAT(*store_->ListInstances(), SizeIs(1));
}

TEST_F(SqliteStoreTest, RequestsRoundTrip) {
  std::string id = Create(MakeExperiment("s", "sha"));
  std::vector<v1::RequestRecord> batch;
  // Out of order on purpose: the store orders by attempt, then index.
  for (int attempt : {2, 1}) {
    for (int index : {1, 0, 2}) batch.push_back(MakeRecord(id, v1::PHASE_FORMAL, attempt, index));
  }
  batch.push_back(MakeRecord(id, v1::PHASE_CACHE_SEED, 1, 0));
  batch[0].clear_chunk_ns();
  batch[0].clear_load_start();
  batch[0].set_error("connection reset");
  batch[0].set_http_status(0);
  batch[0].set_cached_tokens(-1);  // Not reported.
  ASSERT_THAT(store_->AppendRequests(batch, core::Durability::kSynced), IsOk());

  auto all = store_->ListRequests(id, v1::PHASE_FORMAL, 0);
  ASSERT_THAT(all, IsOk());
  ASSERT_THAT(*all, SizeIs(6));
  std::vector<std::pair<int, int>> order;
  for (const auto& r : *all) order.emplace_back(r.attempt(), r.request_index());
  EXPECT_THAT(order, ElementsAre(std::pair(1, 0), std::pair(1, 1), std::pair(1, 2), std::pair(2, 0),
                                 std::pair(2, 1), std::pair(2, 2)));
  EXPECT_THAT((*all)[4], EqualsProto(batch[0]));  // attempt 2, index 1
  EXPECT_THAT((*all)[0], EqualsProto(batch[4]));  // attempt 1, index 0

  auto second = store_->ListRequests(id, v1::PHASE_FORMAL, 2);
  ASSERT_THAT(second, IsOk());
  EXPECT_THAT(*second, SizeIs(3));
  auto seed = store_->ListRequests(id, v1::PHASE_CACHE_SEED, 0);
  ASSERT_THAT(seed, IsOk());
  ASSERT_THAT(*seed, SizeIs(1));
  EXPECT_THAT((*seed)[0], EqualsProto(batch[6]));
  EXPECT_THAT((*seed)[0].chunk_ns(), ElementsAre(600, 700, int64_t{1} << 40, -3));
  EXPECT_THAT(*store_->ListRequests(id, v1::PHASE_UNSPECIFIED, 0), SizeIs(7));
  EXPECT_THAT(*store_->ListRequests(id, v1::PHASE_WARMUP, 0), IsEmpty());
}

// Every RequestRecord field having a column is request_rows_test's.

TEST_F(SqliteStoreTest, DuplicateRequestRollsBackTheWholeBatch) {
  std::string id = Create(MakeExperiment("s", "sha"));
  std::vector<v1::RequestRecord> batch = {MakeRecord(id, v1::PHASE_FORMAL, 1, 0),
                                          MakeRecord(id, v1::PHASE_FORMAL, 1, 1),
                                          MakeRecord(id, v1::PHASE_FORMAL, 1, 0)};
  EXPECT_THAT(store_->AppendRequests(batch, core::Durability::kSynced),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("index 0")));
  EXPECT_THAT(*store_->ListRequests(id, v1::PHASE_FORMAL, 0), IsEmpty());
  EXPECT_THAT(store_->AppendRequests({MakeRecord("exp-99", v1::PHASE_FORMAL, 1, 0)},
                                     core::Durability::kSynced),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("exp-99")));
  EXPECT_THAT(store_->AppendRequests({}, core::Durability::kSynced), IsOk());
}

// Speed is measured in bench/, not here: this checks many large batches land whole.
TEST_F(SqliteStoreTest, AppendsManyLargeBatches) {
  std::string id = Create(MakeExperiment("s", "sha"));
  constexpr int kBatches = 20;
  constexpr int kBatch = 5000;
  for (int b = 0; b < kBatches; ++b) {
    std::vector<v1::RequestRecord> batch;
    batch.reserve(kBatch);
    for (int i = 0; i < kBatch; ++i)
      batch.push_back(MakeRecord(id, v1::PHASE_FORMAL, 1, b * kBatch + i));
    ASSERT_THAT(store_->AppendRequests(batch, core::Durability::kSynced), IsOk());
  }
  EXPECT_EQ(RawInt("SELECT count(*) FROM requests"), kBatches * kBatch);
}

TEST_F(SqliteStoreTest, InstancesPutReplaceRemoveList) {
  v1::ServingInstance prefill;
  prefill.set_side(v1::SIDE_PREFILL);
  prefill.set_pid(100);
  prefill.set_process_start_ticks(123456);
  prefill.set_port(8100);
  prefill.set_fingerprint("a1b2c3");
  prefill.set_experiment_id("exp-1");
  *prefill.mutable_launched_at() = Ts(1'700'000'000, 1);
  prefill.set_log_path("/state/prefill.log");
  v1::ServingInstance decode = prefill;
  decode.set_side(v1::SIDE_DECODE);
  decode.set_pid(200);
  *decode.mutable_warm_since() = Ts(1'700'000'050);

  ASSERT_THAT(store_->PutInstance(decode), IsOk());
  ASSERT_THAT(store_->PutInstance(prefill), IsOk());
  auto list = store_->ListInstances();
  ASSERT_THAT(list, IsOk());
  ASSERT_THAT(*list, SizeIs(2));
  EXPECT_THAT((*list)[0], EqualsProto(prefill));
  EXPECT_THAT((*list)[1], EqualsProto(decode));

  decode.set_pid(201);  // Relaunched: replaces the side's row.
  ASSERT_THAT(store_->PutInstance(decode), IsOk());
  ASSERT_THAT(store_->RemoveInstance(v1::SIDE_PREFILL), IsOk());
  ASSERT_THAT(store_->RemoveInstance(v1::SIDE_ROUTER), IsOk());  // Absent: fine.
  list = store_->ListInstances();
  ASSERT_THAT(list, IsOk());
  ASSERT_THAT(*list, SizeIs(1));
  EXPECT_THAT((*list)[0], EqualsProto(decode));
  EXPECT_EQ(RawInt("SELECT pid FROM instances WHERE side = 2"), 201);

  v1::ServingInstance no_side;
  EXPECT_THAT(store_->PutInstance(no_side),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("side")));
}

TEST_F(SqliteStoreTest, ConcurrentWritersAreSerialized) {
  std::string id = Create(MakeExperiment("s", "sha"));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        ASSERT_THAT(
            store_->CreateExperiment(MakeExperiment("s", "sha"), MakeEvent("submitted", "", 1)),
            IsOk());
        ASSERT_THAT(store_->AppendRequests({MakeRecord(id, v1::PHASE_FORMAL, t + 1, i)},
                                           core::Durability::kSynced),
                    IsOk());
        ASSERT_THAT(store_->ListExperiments({}), IsOk());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_THAT(Ids({}), SizeIs(101));
  EXPECT_THAT(*store_->ListRequests(id, v1::PHASE_FORMAL, 0), SizeIs(100));
}

TEST_F(SqliteStoreTest, SecondConnectionHoldingTheLockMakesWritesUnavailable) {
  SqliteStore::Options options;
  options.busy_timeout = absl::Milliseconds(50);
  auto other = SqliteStore::Open(path_, options);
  ASSERT_THAT(other, IsOk());
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_THAT((*other)->CreateExperiment(MakeExperiment("s", "sha"), MakeEvent("submitted", "", 1)),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("busy")));
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  EXPECT_THAT((*other)->CreateExperiment(MakeExperiment("s", "sha"), MakeEvent("submitted", "", 1)),
              IsOk());
}

}  // namespace
}  // namespace servelab::storage
