#include "storage/sqlite_db.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace servelab::storage {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

class SqliteDbTest : public ::testing::Test {
 protected:
  std::unique_ptr<SqliteDb> OpenDb(absl::Duration busy_timeout = absl::Seconds(5)) {
    SqliteDb::Options options;
    options.busy_timeout = busy_timeout;
    auto db = SqliteDb::Open(dir_.File("test.db"), options);
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(*db) : nullptr;
  }

  int64_t Count(SqliteDb& db, std::string_view table) {
    auto n = db.QueryInt(std::string("SELECT count(*) FROM ") + std::string(table));
    EXPECT_THAT(n, IsOk());
    return n.value_or(-1);
  }

  testing::TempDir dir_;
};

TEST_F(SqliteDbTest, OpenSetsPragmas) {
  auto db = OpenDb();
  auto mode = db->Prepare("PRAGMA journal_mode");
  ASSERT_THAT(mode, IsOk());
  ASSERT_THAT(mode->Step(), IsOk());
  EXPECT_EQ(mode->ColumnText(0), "wal");
  EXPECT_EQ(db->QueryInt("PRAGMA synchronous").value(), 2);  // FULL
  EXPECT_EQ(db->QueryInt("PRAGMA foreign_keys").value(), 1);
  EXPECT_EQ(db->QueryInt("PRAGMA busy_timeout").value(), 5000);
}

TEST_F(SqliteDbTest, TransactionRollsBackUnlessCommitted) {
  auto db = OpenDb();
  ASSERT_THAT(db->Exec("CREATE TABLE t (x INTEGER)"), IsOk());
  {
    auto txn = Transaction::Begin(*db, TxnMode::kImmediate);
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT(db->Exec("INSERT INTO t VALUES (1)"), IsOk());
  }
  EXPECT_EQ(Count(*db, "t"), 0);
  {
    auto txn = Transaction::Begin(*db, TxnMode::kImmediate);
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT(db->Exec("INSERT INTO t VALUES (1)"), IsOk());
    ASSERT_THAT(txn->Commit(), IsOk());
    EXPECT_THAT(txn->Commit(), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("")));
  }
  EXPECT_EQ(Count(*db, "t"), 1);
}

TEST_F(SqliteDbTest, StatementsAreCachedAndRebindable) {
  auto db = OpenDb();
  ASSERT_THAT(db->Exec("CREATE TABLE t (x INTEGER, s TEXT, b BLOB)"), IsOk());
  for (int i = 0; i < 3; ++i) {
    auto insert = db->Prepare("INSERT INTO t VALUES (?1, ?2, ?3)");
    ASSERT_THAT(insert, IsOk());
    insert->BindInt(1, i);
    insert->BindText(2, "s");
    insert->BindBlob(3, "");
    ASSERT_THAT(insert->Run(), IsOk());
  }
  EXPECT_EQ(Count(*db, "t"), 3);
  // An empty blob stays a blob, not NULL.
  EXPECT_EQ(db->QueryInt("SELECT count(*) FROM t WHERE b IS NOT NULL").value(), 3);
}

TEST_F(SqliteDbTest, BindErrorSurfacesAtStep) {
  auto db = OpenDb();
  auto stmt = db->Prepare("SELECT ?1");
  ASSERT_THAT(stmt, IsOk());
  stmt->BindInt(7, 1);  // Out of range.
  EXPECT_THAT(stmt->Step(), StatusIs(absl::StatusCode::kInternal, HasSubstr("parameter 7")));
}

TEST_F(SqliteDbTest, SqlErrorIsInternalWithSqliteMessage) {
  auto db = OpenDb();
  EXPECT_THAT(db->Exec("SELEKT 1"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("syntax error")));
  EXPECT_THAT(db->Prepare("SELECT * FROM missing"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("no such table: missing")));
}

TEST_F(SqliteDbTest, UniqueViolationIsAlreadyExists) {
  auto db = OpenDb();
  ASSERT_THAT(db->Exec("CREATE TABLE t (x INTEGER PRIMARY KEY); INSERT INTO t VALUES (1)"), IsOk());
  EXPECT_THAT(db->Exec("INSERT INTO t VALUES (1)"),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("UNIQUE constraint failed")));
}

TEST_F(SqliteDbTest, ForeignKeysAreEnforced) {
  auto db = OpenDb();
  ASSERT_THAT(db->Exec("CREATE TABLE p (id TEXT PRIMARY KEY);"
                       "CREATE TABLE c (p TEXT REFERENCES p (id))"),
              IsOk());
  EXPECT_THAT(db->Exec("INSERT INTO c VALUES ('nope')"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("FOREIGN KEY")));
}

TEST_F(SqliteDbTest, BusyPastTimeoutIsUnavailable) {
  auto holder = OpenDb();
  auto waiter = OpenDb(absl::Milliseconds(50));
  auto held = Transaction::Begin(*holder, TxnMode::kImmediate);
  ASSERT_THAT(held, IsOk());
  absl::Time start = absl::Now();
  EXPECT_THAT(Transaction::Begin(*waiter, TxnMode::kImmediate),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("busy")));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(40));
  // Readers are not blocked by a writer in WAL mode.
  EXPECT_THAT(waiter->QueryInt("SELECT count(*) FROM sqlite_master"), IsOk());
}

TEST_F(SqliteDbTest, FullDatabaseIsResourceExhausted) {
  auto db = OpenDb();
  ASSERT_THAT(db->Exec("CREATE TABLE t (b BLOB)"), IsOk());
  // max_page_count stands in for a full disk: sqlite reports both as SQLITE_FULL.
  ASSERT_THAT(db->Exec("PRAGMA max_page_count = 16"), IsOk());
  absl::Status status;
  {
    auto txn = Transaction::Begin(*db, TxnMode::kImmediate);
    ASSERT_THAT(txn, IsOk());
    auto insert = db->Prepare("INSERT INTO t VALUES (?1)");
    ASSERT_THAT(insert, IsOk());
    for (int i = 0; i < 100 && status.ok(); ++i) {
      insert->Reset();
      insert->BindBlob(1, std::string(4096, 'x'));
      status = insert->Run();
    }
  }
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("full")));
  // The connection is still usable after the rollback.
  EXPECT_EQ(Count(*db, "t"), 0);
}

TEST_F(SqliteDbTest, OpenFailureNamesThePath) {
  SqliteDb::Options options;
  EXPECT_THAT(SqliteDb::Open(dir_.File("no/such/dir/x.db"), options),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("no/such/dir/x.db")));
}

TEST_F(SqliteDbTest, ReadOnlyOpenReadsButNeitherCreatesNorWrites) {
  SqliteDb::Options read_only;
  read_only.read_only = true;
  EXPECT_THAT(SqliteDb::Open(dir_.File("missing.db"), read_only),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("missing.db")));
  {
    auto db = OpenDb();
    ASSERT_THAT(db->Exec("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (7);"), IsOk());
  }
  auto db = SqliteDb::Open(dir_.File("test.db"), read_only);
  ASSERT_THAT(db, IsOk());
  EXPECT_EQ((*db)->QueryInt("SELECT x FROM t").value(), 7);
  EXPECT_THAT((*db)->Exec("INSERT INTO t VALUES (8)"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("readonly")));
}

}  // namespace
}  // namespace servelab::storage
