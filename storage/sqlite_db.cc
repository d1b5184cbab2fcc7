#include "storage/sqlite_db.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace servelab::storage {

absl::Status SqliteStatus(sqlite3* db, int rc, std::string_view what) {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return absl::OkStatus();
  // sqlite3_errmsg describes the most recent failure on the connection, which
  // is this one as long as the caller maps the code right away.
  std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const char* file = db != nullptr ? sqlite3_db_filename(db, "main") : nullptr;
  std::string where = file != nullptr && *file != '\0' ? absl::StrCat(" (", file, ")") : "";
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(absl::StrCat(
          ToAbsl(what), ": database is busy past its busy timeout", where, ": ", message));
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(absl::StrCat(ToAbsl(what), ": database or disk is full",
                                                       where, "; free space and retry: ", message));
    default:
      break;
  }
  if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
    return absl::AlreadyExistsError(absl::StrCat(ToAbsl(what), ": ", message));
  }
  return absl::InternalError(absl::StrCat(ToAbsl(what), where, ": ", message, " [",
                                          sqlite3_errstr(rc), ", code ", rc, "]"));
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(other.stmt_), bind_status_(std::move(other.bind_status_)) {
  other.stmt_ = nullptr;
}

Statement::~Statement() {
  if (stmt_ != nullptr) Reset();
}

void Statement::NoteBind(int rc, int index) {
  if (rc != SQLITE_OK && bind_status_.ok()) {
    bind_status_ = SqliteStatus(
        db_, rc, absl::StrCat("binding parameter ", index, " of ", sqlite3_sql(stmt_)));
  }
}

void Statement::BindInt(int index, int64_t value) {
  NoteBind(sqlite3_bind_int64(stmt_, index, value), index);
}

void Statement::BindText(int index, std::string_view value) {
  NoteBind(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      index);
}

void Statement::BindBlob(int index, std::string_view bytes) {
  // A null data pointer would bind NULL; an empty blob must stay a blob.
  static const char kEmpty = 0;
  NoteBind(sqlite3_bind_blob64(stmt_, index, bytes.empty() ? &kEmpty : bytes.data(), bytes.size(),
                               SQLITE_TRANSIENT),
           index);
}

void Statement::BindNull(int index) { NoteBind(sqlite3_bind_null(stmt_, index), index); }

absl::StatusOr<bool> Statement::Step() {
  if (!bind_status_.ok()) return bind_status_;
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteStatus(db_, rc, absl::StrCat("executing ", sqlite3_sql(stmt_)));
}

absl::Status Statement::Run() {
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return absl::OkStatus();
  }
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_status_ = absl::OkStatus();
}

bool Statement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::ColumnInt(int column) const { return sqlite3_column_int64(stmt_, column); }

std::string_view Statement::ColumnText(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  if (text == nullptr) return {};
  return std::string_view(text, sqlite3_column_bytes(stmt_, column));
}

std::string_view Statement::ColumnBlob(int column) const {
  const auto* blob = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
  if (blob == nullptr) return {};
  return std::string_view(blob, sqlite3_column_bytes(stmt_, column));
}

absl::StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path,
                                                         const Options& options) {
  sqlite3* raw = nullptr;
  // NOMUTEX: the owner serializes access, sqlite's own mutex would be redundant.
  const int access =
      options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(path.c_str(), &raw, access | SQLITE_OPEN_NOMUTEX, nullptr);
  // sqlite3_open_v2 hands back a handle even on failure; it must be closed.
  std::unique_ptr<SqliteDb> db(new SqliteDb(raw, path));
  if (rc != SQLITE_OK) {
    return SqliteStatus(raw, rc, absl::StrCat("opening database ", path));
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, static_cast<int>(absl::ToInt64Milliseconds(options.busy_timeout)));
  if (options.read_only) return db;

  SERVELAB_ASSIGN_OR_RETURN(Statement wal, db->Prepare("PRAGMA journal_mode=WAL"));
  SERVELAB_ASSIGN_OR_RETURN(bool row, wal.Step());
  std::string mode = row ? absl::AsciiStrToLower(ToAbsl(wal.ColumnText(0))) : "";
  if (mode != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat("database ", path, ": cannot enable WAL journal mode (got '", mode,
                     "'); put the state directory on a local filesystem"));
  }
  SERVELAB_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"));
  // foreign_keys is a silent no-op when sqlite was built without it.
  SERVELAB_ASSIGN_OR_RETURN(int64_t fk, db->QueryInt("PRAGMA foreign_keys"));
  if (fk != 1) return absl::InternalError("sqlite refuses PRAGMA foreign_keys=ON");
  return db;
}

SqliteDb::~SqliteDb() {
  statements_.clear();
  sqlite3_close(db_);
}

absl::Status SqliteDb::Exec(std::string_view sql) {
  std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  return SqliteStatus(db_, rc, absl::StrCat("executing ", ToAbsl(sql)));
}

absl::StatusOr<Statement> SqliteDb::Prepare(std::string_view sql) {
  auto it = statements_.find(ToAbsl(sql));
  if (it == statements_.end()) {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(raw);
      return SqliteStatus(db_, rc, absl::StrCat("preparing ", ToAbsl(sql)));
    }
    it = statements_.emplace(std::string(sql), StmtPtr(raw)).first;
  }
  return Statement(db_, it->second.get());
}

absl::StatusOr<int64_t> SqliteDb::QueryInt(std::string_view sql) {
  SERVELAB_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  SERVELAB_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return absl::InternalError(absl::StrCat(ToAbsl(sql), " returned no row"));
  return stmt.ColumnInt(0);
}

absl::Status SqliteDb::SetSync(CommitSync sync) {
  if (sync == sync_) return absl::OkStatus();
  SERVELAB_RETURN_IF_ERROR(
      Exec(sync == CommitSync::kNormal ? "PRAGMA synchronous=NORMAL" : "PRAGMA synchronous=FULL"));
  sync_ = sync;
  return absl::OkStatus();
}

absl::StatusOr<Transaction> Transaction::Begin(SqliteDb& db, TxnMode mode, CommitSync sync) {
  // Also for kFull: a kNormal transaction that could not restore FULL at its
  // end is corrected here, before anything is written.
  SERVELAB_RETURN_IF_ERROR(db.SetSync(sync));
  Transaction txn(&db);  // From here on, its destructor restores FULL.
  SERVELAB_RETURN_IF_ERROR(
      db.Exec(mode == TxnMode::kImmediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED"));
  return txn;
}

Transaction::~Transaction() {
  if (db_ == nullptr) return;
  // After some errors (SQLITE_FULL, IOERR) sqlite has already rolled back on
  // its own; a second ROLLBACK would only fail.
  if (!sqlite3_get_autocommit(db_->raw())) {
    sqlite3_exec(db_->raw(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  (void)db_->SetSync(CommitSync::kFull);  // Best effort; the next Begin retries.
}

absl::Status Transaction::Commit() {
  if (db_ == nullptr) return absl::FailedPreconditionError("transaction already finished");
  SERVELAB_RETURN_IF_ERROR(db_->Exec("COMMIT"));
  // Committed, so the write succeeded whatever follows. Back to FULL for a
  // write outside a transaction; should that fail, the next Begin retries.
  (void)db_->SetSync(CommitSync::kFull);
  db_ = nullptr;
  return absl::OkStatus();
}

}  // namespace servelab::storage
