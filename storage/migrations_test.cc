#include "storage/migrations.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/sqlite_store.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace servelab::storage {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

class MigrationsTest : public ::testing::Test {
 protected:
  std::unique_ptr<SqliteDb> OpenDb() {
    auto db = SqliteDb::Open(path_, SqliteDb::Options());
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(*db) : nullptr;
  }

  // A database with the real schema as it was at `version`.
  std::unique_ptr<SqliteDb> OpenAtVersion(size_t version) {
    auto db = OpenDb();
    absl::Span<const std::string_view> all = SchemaMigrations();
    EXPECT_GE(all.size(), version + 1);
    EXPECT_THAT(Migrate(*db, all.subspan(0, version)), IsOk());
    return db;
  }

  static int64_t UserVersion(SqliteDb& db) { return db.QueryInt("PRAGMA user_version").value(); }

  static std::vector<std::string> Tables(SqliteDb& db) {
    std::vector<std::string> tables;
    auto stmt = db.Prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    EXPECT_THAT(stmt, IsOk());
    while (stmt->Step().value_or(false)) tables.emplace_back(stmt->ColumnText(0));
    return tables;
  }

  testing::TempDir dir_;
  std::string path_ = dir_.File("servelab.db");
};

TEST_F(MigrationsTest, EmptyDatabaseGetsLatestSchema) {
  auto db = OpenDb();
  ASSERT_EQ(UserVersion(*db), 0);
  ASSERT_THAT(Migrate(*db), IsOk());
  EXPECT_EQ(UserVersion(*db), LatestSchemaVersion());
  EXPECT_GE(LatestSchemaVersion(), 1);
  EXPECT_THAT(Tables(*db), IsSupersetOf({"specs", "experiments", "stages", "events", "results",
                                         "requests", "instances", "sequences"}));
}

TEST_F(MigrationsTest, MigratingTwiceIsANoOp) {
  auto db = OpenDb();
  ASSERT_THAT(Migrate(*db), IsOk());
  ASSERT_THAT(Migrate(*db), IsOk());
  EXPECT_EQ(UserVersion(*db), LatestSchemaVersion());
}

TEST_F(MigrationsTest, AppliesOnlyMissingSteps) {
  std::vector<std::string_view> steps = {"CREATE TABLE a (x INTEGER);"};
  auto db = OpenDb();
  ASSERT_THAT(Migrate(*db, steps), IsOk());
  EXPECT_EQ(UserVersion(*db), 1);
  // Re-running step 1 would fail with "table a already exists".
  steps.push_back("CREATE TABLE b (y INTEGER); INSERT INTO a VALUES (1);");
  ASSERT_THAT(Migrate(*db, steps), IsOk());
  EXPECT_EQ(UserVersion(*db), 2);
  EXPECT_EQ(db->QueryInt("SELECT count(*) FROM a").value(), 1);
}

// A database from before workload.repeats keeps its records, each run 1,
// and the run joins the key.
TEST_F(MigrationsTest, RequestsFromVersionTwoBecomeRunOne) {
  auto db = OpenAtVersion(2);
  ASSERT_THAT(db->Exec("INSERT INTO specs VALUES ('h', '{}', x'');"
                       "INSERT INTO experiments (id, seq, scenario, state, spec_sha256, "
                       "failure_class, experiment) VALUES ('exp-1', 1, 's', 3, 'h', 0, x'');"
                       "INSERT INTO requests VALUES ('exp-1', 4, 1, 0, 0, 1, 2, 3, x'', 1, 1, "
                       "-1, 200, '', 1, 1, NULL, 0);"),
              IsOk());
  ASSERT_THAT(Migrate(*db), IsOk());
  EXPECT_EQ(db->QueryInt("SELECT repeat FROM requests WHERE experiment_id = 'exp-1'").value(), 1);
  // Run 2 of the same request is a new row, not a duplicate.
  EXPECT_THAT(db->Exec("INSERT INTO requests SELECT experiment_id, phase, attempt, request_index, "
                       "planned_send_ns, sent_ns, first_token_ns, end_ns, chunk_ns, prompt_tokens, "
                       "completion_tokens, cached_tokens, http_status, error, "
                       "requested_prompt_tokens, requested_completion_tokens, load_start, "
                       "queued_ns, 2 FROM requests"),
              IsOk());
  EXPECT_EQ(db->QueryInt("SELECT count(*) FROM requests").value(), 2);
}

// The summary's counts start from the rows already stored and then follow
// every insert, state change and delete, in the same transaction.
TEST_F(MigrationsTest, ExperimentCountsStartFromStoredRowsAndFollowEveryWrite) {
  auto db = OpenAtVersion(4);
  ASSERT_THAT(db->Exec("INSERT INTO specs VALUES ('h', '{}', x'');"
                       "INSERT INTO experiments (id, seq, scenario, state, spec_sha256, "
                       "failure_class, experiment) VALUES ('exp-1', 1, 's', 3, 'h', 0, x''), "
                       "('exp-2', 2, 's', 3, 'h', 0, x''), ('exp-3', 3, 's', 5, 'h', 2, x'');"),
              IsOk());
  ASSERT_THAT(Migrate(*db), IsOk());
  auto count = [&](int state, int failure_class) {
    return db
        ->QueryInt(absl::StrCat("SELECT COALESCE(SUM(count), 0) FROM experiment_counts WHERE "
                                "state = ",
                                state, " AND failure_class = ", failure_class))
        .value();
  };
  EXPECT_EQ(count(3, 0), 2);
  EXPECT_EQ(count(5, 2), 1);

  ASSERT_THAT(db->Exec("INSERT INTO experiments (id, seq, scenario, state, spec_sha256, "
                       "failure_class, experiment) VALUES ('exp-4', 4, 's', 1, 'h', 0, x'');"
                       "UPDATE experiments SET state = 5, failure_class = 2 WHERE id = 'exp-1';"
                       "UPDATE experiments SET scenario = 't' WHERE id = 'exp-2';"
                       "DELETE FROM experiments WHERE id = 'exp-3';"),
              IsOk());
  EXPECT_EQ(count(1, 0), 1);
  EXPECT_EQ(count(3, 0), 1);
  EXPECT_EQ(count(5, 2), 1);
  EXPECT_EQ(db->QueryInt("SELECT SUM(count) FROM experiment_counts").value(),
            db->QueryInt("SELECT COUNT(*) FROM experiments").value());
}

TEST_F(MigrationsTest, FailingStepRollsBackAndKeepsVersion) {
  std::vector<std::string_view> steps = {
      "CREATE TABLE a (x INTEGER);",
      "CREATE TABLE b (y INTEGER); INSERT INTO missing VALUES (1);",
  };
  auto db = OpenDb();
  EXPECT_THAT(Migrate(*db, steps),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("to version 2")));
  EXPECT_EQ(UserVersion(*db), 1);
  EXPECT_THAT(Tables(*db), ::testing::ElementsAre("a"));
}

TEST_F(MigrationsTest, NewerDatabaseIsRefused) {
  {
    auto db = OpenDb();
    ASSERT_THAT(db->Exec("PRAGMA user_version = " + std::to_string(LatestSchemaVersion() + 1)),
                IsOk());
  }
  auto db = OpenDb();
  EXPECT_THAT(Migrate(*db),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("newer servelabd")));
  EXPECT_EQ(UserVersion(*db), LatestSchemaVersion() + 1);
  EXPECT_THAT(Tables(*db), ::testing::IsEmpty());
  EXPECT_THAT(SqliteStore::Open(path_),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("schema version")));
}

TEST_F(MigrationsTest, StoreOpenMigrates) {
  ASSERT_THAT(SqliteStore::Open(path_), IsOk());
  auto db = OpenDb();
  EXPECT_EQ(UserVersion(*db), LatestSchemaVersion());
}

}  // namespace
}  // namespace servelab::storage
