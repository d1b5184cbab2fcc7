// SQLite record files (format in record_file.h). The `requests` table has
// the daemon's columns and encodings, so rows can be copied between the two.
#include <sqlite3.h>

#include <cstring>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "loadgen/record_file.h"

namespace servelab::loadgen {
namespace {

using google::protobuf::util::TimeUtil;

constexpr char kSchema[] = R"sql(
CREATE TABLE requests (
  experiment_id TEXT NOT NULL,
  phase INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  planned_send_ns INTEGER NOT NULL,
  sent_ns INTEGER NOT NULL,
  first_token_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  chunk_ns BLOB NOT NULL,  -- little-endian int64 per chunk
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL,
  http_status INTEGER NOT NULL,
  error TEXT NOT NULL,
  requested_prompt_tokens INTEGER NOT NULL,
  requested_completion_tokens INTEGER NOT NULL,
  load_start INTEGER,
  PRIMARY KEY (experiment_id, phase, attempt, idx)
);
CREATE TABLE load_records_extra (
  experiment_id TEXT NOT NULL,
  phase INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  queued_ns INTEGER NOT NULL,
  PRIMARY KEY (experiment_id, phase, attempt, idx)
);
CREATE TABLE load_spec (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  spec_json TEXT NOT NULL
);
)sql";

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

absl::Status DbError(sqlite3* db, const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", sqlite3_errmsg(db)));
}

absl::Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err != nullptr ? err : "unknown error";
    sqlite3_free(err);
    return absl::InternalError(absl::StrCat("sqlite: ", msg));
  }
  return absl::OkStatus();
}

absl::StatusOr<Stmt> Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) return DbError(db, "prepare");
  return Stmt(s);
}

absl::StatusOr<Db> Open(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) {
    return absl::InternalError(
        absl::StrCat("cannot open ", path, ": ", raw ? sqlite3_errmsg(raw) : "out of memory"));
  }
  sqlite3_busy_timeout(db.get(), 5000);
  return db;
}

std::string EncodeChunks(const v1::RequestRecord& r) {
  std::string out(static_cast<size_t>(r.chunk_ns_size()) * 8, '\0');
  for (int i = 0; i < r.chunk_ns_size(); ++i) {
    uint64_t v = static_cast<uint64_t>(r.chunk_ns(i));
    for (int b = 0; b < 8; ++b) out[static_cast<size_t>(i) * 8 + b] = static_cast<char>(v >> (8 * b));
  }
  return out;
}

class SqliteSink : public RecordSink {
 public:
  SqliteSink(Db db, Stmt insert, Stmt insert_extra)
      : db_(std::move(db)), insert_(std::move(insert)), insert_extra_(std::move(insert_extra)) {}

  absl::Status Write(const std::vector<v1::RequestRecord>& records) override {
    if (absl::Status s = Exec(db_.get(), "BEGIN IMMEDIATE"); !s.ok()) return s;
    for (const auto& r : records) {
      if (absl::Status s = Insert(r); !s.ok()) {
        Exec(db_.get(), "ROLLBACK").IgnoreError();
        return s;
      }
    }
    return Exec(db_.get(), "COMMIT");
  }

 private:
  absl::Status Insert(const v1::RequestRecord& r) {
    sqlite3_stmt* s = insert_.get();
    sqlite3_reset(s);
    sqlite3_bind_text(s, 1, r.experiment_id().data(), static_cast<int>(r.experiment_id().size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 2, r.phase());
    sqlite3_bind_int(s, 3, r.attempt());
    sqlite3_bind_int(s, 4, r.index());
    sqlite3_bind_int64(s, 5, r.planned_send_ns());
    sqlite3_bind_int64(s, 6, r.sent_ns());
    sqlite3_bind_int64(s, 7, r.first_token_ns());
    sqlite3_bind_int64(s, 8, r.end_ns());
    std::string chunks = EncodeChunks(r);
    sqlite3_bind_blob(s, 9, chunks.data(), static_cast<int>(chunks.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 10, r.prompt_tokens());
    sqlite3_bind_int(s, 11, r.completion_tokens());
    sqlite3_bind_int(s, 12, r.cached_tokens());
    sqlite3_bind_int(s, 13, r.http_status());
    sqlite3_bind_text(s, 14, r.error().data(), static_cast<int>(r.error().size()), SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 15, r.requested_prompt_tokens());
    sqlite3_bind_int(s, 16, r.requested_completion_tokens());
    if (r.has_load_start()) {
      sqlite3_bind_int64(s, 17, TimeUtil::TimestampToNanoseconds(r.load_start()));
    } else {
      sqlite3_bind_null(s, 17);
    }
    if (sqlite3_step(s) != SQLITE_DONE) return DbError(db_.get(), "insert request");
    sqlite3_stmt* e = insert_extra_.get();
    sqlite3_reset(e);
    sqlite3_bind_text(e, 1, r.experiment_id().data(), static_cast<int>(r.experiment_id().size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_int(e, 2, r.phase());
    sqlite3_bind_int(e, 3, r.attempt());
    sqlite3_bind_int(e, 4, r.index());
    sqlite3_bind_int64(e, 5, r.queued_ns());
    if (sqlite3_step(e) != SQLITE_DONE) return DbError(db_.get(), "insert request extra");
    return absl::OkStatus();
  }

  Db db_;
  Stmt insert_;
  Stmt insert_extra_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RecordSink>> OpenSqliteRecordFile(const std::string& path,
                                                                 const v1::ExperimentSpec& spec) {
  absl::StatusOr<Db> db = Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!db.ok()) return db.status();
  sqlite3* d = db->get();
  for (const char* sql : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL"}) {
    if (absl::Status s = Exec(d, sql); !s.ok()) return s;
  }
  if (absl::Status s = Exec(d, kSchema); !s.ok()) return s;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string spec_json;
  if (!google::protobuf::util::MessageToJsonString(spec, &spec_json, options).ok()) {
    return absl::InternalError("cannot serialize the spec");
  }
  absl::StatusOr<Stmt> put_spec = Prepare(d, "INSERT INTO load_spec (id, spec_json) VALUES (1, ?1)");
  if (!put_spec.ok()) return put_spec.status();
  sqlite3_bind_text(put_spec->get(), 1, spec_json.data(), static_cast<int>(spec_json.size()),
                    SQLITE_TRANSIENT);
  if (sqlite3_step(put_spec->get()) != SQLITE_DONE) return DbError(d, "insert spec");
  absl::StatusOr<Stmt> insert = Prepare(
      d,
      "INSERT INTO requests (experiment_id, phase, attempt, idx, planned_send_ns, sent_ns, "
      "first_token_ns, end_ns, chunk_ns, prompt_tokens, completion_tokens, cached_tokens, "
      "http_status, error, requested_prompt_tokens, requested_completion_tokens, load_start) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)");
  if (!insert.ok()) return insert.status();
  absl::StatusOr<Stmt> extra = Prepare(
      d,
      "INSERT INTO load_records_extra (experiment_id, phase, attempt, idx, queued_ns) "
      "VALUES (?1, ?2, ?3, ?4, ?5)");
  if (!extra.ok()) return extra.status();
  return std::make_unique<SqliteSink>(*std::move(db), *std::move(insert), *std::move(extra));
}

absl::StatusOr<RecordFile> ReadSqliteRecordFile(const std::string& path) {
  absl::StatusOr<Db> db = Open(path, SQLITE_OPEN_READONLY);
  if (!db.ok()) return db.status();
  sqlite3* d = db->get();
  RecordFile file;
  {
    absl::StatusOr<Stmt> q = Prepare(d, "SELECT spec_json FROM load_spec WHERE id = 1");
    if (!q.ok()) return q.status();
    if (sqlite3_step(q->get()) == SQLITE_ROW) {
      const char* json = reinterpret_cast<const char*>(sqlite3_column_text(q->get(), 0));
      if (!google::protobuf::util::JsonStringToMessage(json ? json : "{}", &file.spec).ok()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": bad load_spec row"));
      }
    }
  }
  absl::StatusOr<Stmt> q = Prepare(
      d,
      "SELECT r.experiment_id, r.phase, r.attempt, r.idx, r.planned_send_ns, r.sent_ns, "
      "r.first_token_ns, r.end_ns, r.chunk_ns, r.prompt_tokens, r.completion_tokens, "
      "r.cached_tokens, r.http_status, r.error, r.requested_prompt_tokens, "
      "r.requested_completion_tokens, r.load_start, e.queued_ns "
      "FROM requests r LEFT JOIN load_records_extra e USING (experiment_id, phase, attempt, idx) "
      "ORDER BY r.phase, r.attempt, r.idx");
  if (!q.ok()) return q.status();
  sqlite3_stmt* s = q->get();
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    v1::RequestRecord r;
    const char* id = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    r.set_experiment_id(id ? id : "");
    r.set_phase(static_cast<v1::Phase>(sqlite3_column_int(s, 1)));
    r.set_attempt(sqlite3_column_int(s, 2));
    r.set_index(sqlite3_column_int(s, 3));
    r.set_planned_send_ns(sqlite3_column_int64(s, 4));
    r.set_sent_ns(sqlite3_column_int64(s, 5));
    r.set_first_token_ns(sqlite3_column_int64(s, 6));
    r.set_end_ns(sqlite3_column_int64(s, 7));
    const auto* blob = static_cast<const unsigned char*>(sqlite3_column_blob(s, 8));
    int bytes = sqlite3_column_bytes(s, 8);
    if (bytes % 8 != 0) {
      return absl::InternalError(absl::StrCat(path, ": corrupt chunk_ns blob of ", bytes, " bytes"));
    }
    for (int i = 0; i + 8 <= bytes; i += 8) {
      uint64_t v = 0;
      for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(blob[i + b]) << (8 * b);
      r.add_chunk_ns(static_cast<int64_t>(v));
    }
    r.set_prompt_tokens(sqlite3_column_int(s, 9));
    r.set_completion_tokens(sqlite3_column_int(s, 10));
    r.set_cached_tokens(sqlite3_column_int(s, 11));
    r.set_http_status(sqlite3_column_int(s, 12));
    const char* err = reinterpret_cast<const char*>(sqlite3_column_text(s, 13));
    r.set_error(err ? err : "");
    r.set_requested_prompt_tokens(sqlite3_column_int(s, 14));
    r.set_requested_completion_tokens(sqlite3_column_int(s, 15));
    if (sqlite3_column_type(s, 16) != SQLITE_NULL) {
      *r.mutable_load_start() = TimeUtil::NanosecondsToTimestamp(sqlite3_column_int64(s, 16));
    }
    r.set_queued_ns(sqlite3_column_int64(s, 17));
    file.records.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return DbError(d, "read requests");
  return file;
}

}  // namespace servelab::loadgen
