#include "storage/sqlite_db.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace servelab::storage {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

// Counts the fsyncs SQLite asks for (xSync) on connections opened while it
// is registered, as the default VFS. Files are opened by the real VFS; only
// their xSync is wrapped, so everything else is SQLite's own code.
class SyncCountingVfs {
 public:
  SyncCountingVfs() {
    base_ = sqlite3_vfs_find(nullptr);
    vfs_ = *base_;
    vfs_.zName = "servelab-sync-counting";
    vfs_.xOpen = &Open;
    sqlite3_vfs_register(&vfs_, /*makeDflt=*/1);
  }
  ~SyncCountingVfs() { sqlite3_vfs_unregister(&vfs_); }
  int syncs() const { return syncs_.load(); }

 private:
  // A file type's methods with xSync counted; methods is the first member,
  // so the wrapped pointer leads back to the original.
  struct Wrapped {
    sqlite3_io_methods methods;
    const sqlite3_io_methods* original;
  };

  static int Open(sqlite3_vfs*, const char* name, sqlite3_file* file, int flags, int* out_flags) {
    int rc = base_->xOpen(base_, name, file, flags, out_flags);
    if (file->pMethods == nullptr) return rc;
    std::unique_ptr<Wrapped>& wrapped = wrapped_[file->pMethods];
    if (wrapped == nullptr) {
      wrapped = std::make_unique<Wrapped>(Wrapped{*file->pMethods, file->pMethods});
      wrapped->methods.xSync = &Sync;
    }
    file->pMethods = &wrapped->methods;
    return rc;
  }
  static int Sync(sqlite3_file* file, int flags) {
    ++syncs_;
    return reinterpret_cast<const Wrapped*>(file->pMethods)->original->xSync(file, flags);
  }

  static inline sqlite3_vfs* base_ = nullptr;
  static inline std::atomic<int> syncs_{0};
  static inline std::map<const sqlite3_io_methods*, std::unique_ptr<Wrapped>> wrapped_;
  sqlite3_vfs vfs_;
};

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

// A kNormal commit waits for no fsync; the next kFull one syncs the log,
// and with it the earlier commit. The connection stays at FULL either way.
TEST_F(SqliteDbTest, ANormalCommitWaitsForNoFsyncAndTheNextFullOneTakesItToTheDisk) {
  SyncCountingVfs vfs;
  auto db = OpenDb();
  ASSERT_THAT(db->Exec("CREATE TABLE t (x INTEGER)"), IsOk());
  const int before = vfs.syncs();
  {
    auto txn = Transaction::Begin(*db, TxnMode::kImmediate, CommitSync::kNormal);
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT(db->Exec("INSERT INTO t VALUES (1)"), IsOk());
    ASSERT_THAT(txn->Commit(), IsOk());
  }
  EXPECT_EQ(vfs.syncs(), before);
  EXPECT_EQ(db->QueryInt("PRAGMA synchronous").value(), 2);  // FULL again
  {
    auto txn = Transaction::Begin(*db, TxnMode::kImmediate);
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT(db->Exec("INSERT INTO t VALUES (2)"), IsOk());
    ASSERT_THAT(txn->Commit(), IsOk());
  }
  EXPECT_GT(vfs.syncs(), before);
  db.reset();
  EXPECT_EQ(Count(*OpenDb(), "t"), 2);
}

TEST_F(SqliteDbTest, ANormalTransactionRolledBackLeavesTheConnectionAtFull) {
  auto db = OpenDb();
  ASSERT_THAT(db->Exec("CREATE TABLE t (x INTEGER)"), IsOk());
  {
    auto txn = Transaction::Begin(*db, TxnMode::kImmediate, CommitSync::kNormal);
    ASSERT_THAT(txn, IsOk());
    EXPECT_EQ(db->QueryInt("PRAGMA synchronous").value(), 1);  // NORMAL
    ASSERT_THAT(db->Exec("INSERT INTO t VALUES (1)"), IsOk());
  }
  EXPECT_EQ(db->QueryInt("PRAGMA synchronous").value(), 2);
  EXPECT_EQ(Count(*db, "t"), 0);
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
