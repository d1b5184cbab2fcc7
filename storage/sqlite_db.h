// SqliteDb: a thin RAII layer over the sqlite3 C API, for storage/ and for
// servelab-load's record files (loadgen/sqlite_record_file.cc).
// It owns one connection, caches prepared statements (finalized by a deleter
// when the connection closes) and maps result codes onto absl::Status:
//
//   SQLITE_BUSY / SQLITE_LOCKED past the busy timeout -> UNAVAILABLE
//   SQLITE_FULL (disk or max_page_count full)          -> RESOURCE_EXHAUSTED
//   PRIMARY KEY / UNIQUE constraint                    -> ALREADY_EXISTS
//   anything else                                      -> INTERNAL
// Each message carries what was being done and sqlite's own message.
//
//   SERVELAB_ASSIGN_OR_RETURN(auto db, SqliteDb::Open(path, {}));
//   SERVELAB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(*db, TxnMode::kImmediate));
//   SERVELAB_ASSIGN_OR_RETURN(Statement insert, db->Prepare("INSERT INTO t VALUES (?1)"));
//   insert.BindInt(1, 42);
//   SERVELAB_RETURN_IF_ERROR(insert.Run());
//   SERVELAB_RETURN_IF_ERROR(txn.Commit());  // Otherwise rolled back on scope exit.
//
// Not thread-safe: the owner serializes access (SqliteStore holds a mutex).
#ifndef SERVELAB_STORAGE_SQLITE_DB_H_
#define SERVELAB_STORAGE_SQLITE_DB_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace servelab::storage {

// Debian's abseil is built with its own absl::string_view, which StrCat and
// friends take but std::string_view does not convert to.
inline absl::string_view ToAbsl(std::string_view s) { return {s.data(), s.size()}; }

// Maps a sqlite result code of `db` (nullable) to a Status; OK for
// SQLITE_OK/ROW/DONE. `what` says what was being done.
absl::Status SqliteStatus(sqlite3* db, int rc, std::string_view what);

struct StmtDeleter {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

// A borrowed, cached prepared statement. Bind errors are remembered and
// returned by the next Step()/Run(), so call sites check one Status. The
// statement is reset (bindings cleared) on destruction, which ends any
// implicit read it holds.
class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  ~Statement();

  // Parameters are 1-based, as in SQL (?1, ?2, ...).
  void BindInt(int index, int64_t value);
  void BindText(int index, std::string_view value);
  void BindBlob(int index, std::string_view bytes);
  void BindNull(int index);

  // True when a row is available, false when done.
  absl::StatusOr<bool> Step();
  // Steps to completion, ignoring any rows.
  absl::Status Run();
  // Resets for another execution with new bindings (a reused INSERT).
  void Reset();

  // Columns are 0-based, as in sqlite3_column_*. The views are valid until
  // the next Step/Reset.
  bool IsNull(int column) const;
  int64_t ColumnInt(int column) const;
  std::string_view ColumnText(int column) const;
  std::string_view ColumnBlob(int column) const;

 private:
  void NoteBind(int rc, int index);

  sqlite3* db_;
  sqlite3_stmt* stmt_;  // Owned by the SqliteDb cache; null after a move.
  absl::Status bind_status_;
};

// What the commit waits for. The connection is opened with
// synchronous=FULL; kNormal lowers it for one transaction (under WAL: no
// fsync at COMMIT; the commit reaches the disk with the next FULL commit or
// checkpoint, in commit order). SQLite refuses to change the level inside a
// transaction, so it is chosen at Begin.
enum class CommitSync { kFull, kNormal };

class SqliteDb {
 public:
  struct Options {
    absl::Duration busy_timeout = absl::Milliseconds(5000);
    // Opens an existing file for reading only: nothing is created and the
    // journal mode is left as the file has it.
    bool read_only = false;
  };

  // Opens (creating) the database file at `path` with journal_mode=WAL,
  // synchronous=FULL, foreign_keys=ON and the busy timeout. Fails when WAL
  // cannot be enabled (e.g. a filesystem without shared memory support).
  // With read_only, fails when the file does not exist.
  static absl::StatusOr<std::unique_ptr<SqliteDb>> Open(const std::string& path,
                                                        const Options& options);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Runs one or more statements that return no rows the caller needs.
  absl::Status Exec(std::string_view sql);
  // A cached statement for `sql`, prepared on first use.
  absl::StatusOr<Statement> Prepare(std::string_view sql);
  // Runs a query whose first row's first column is an integer (a PRAGMA).
  absl::StatusOr<int64_t> QueryInt(std::string_view sql);

  const std::string& path() const { return path_; }
  sqlite3* raw() { return db_; }

  // Sets PRAGMA synchronous unless the connection is already there. Outside
  // a transaction only: SQLite refuses the change inside one.
  absl::Status SetSync(CommitSync sync);

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  sqlite3* db_;
  std::string path_;
  CommitSync sync_ = CommitSync::kFull;  // What Open sets.
  // Declared after db_ so it is destroyed first: every statement is
  // finalized before the connection closes.
  absl::flat_hash_map<std::string, StmtPtr> statements_;
};

enum class TxnMode {
  // Takes the write lock up front, so a writer waits on busy_timeout at BEGIN
  // instead of failing on a lock upgrade mid-transaction.
  kImmediate,
  // A read snapshot: consistent multi-statement reads.
  kDeferred,
};

// Rolls back on destruction unless Commit() succeeded.
class Transaction {
 public:
  // With kNormal the connection is back at FULL once the transaction ends,
  // so a write outside a transaction is synced.
  static absl::StatusOr<Transaction> Begin(SqliteDb& db, TxnMode mode,
                                           CommitSync sync = CommitSync::kFull);
  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();

  absl::Status Commit();

 private:
  explicit Transaction(SqliteDb* db) : db_(db) {}
  SqliteDb* db_;  // Null once committed or moved from.
};

}  // namespace servelab::storage

#endif  // SERVELAB_STORAGE_SQLITE_DB_H_
