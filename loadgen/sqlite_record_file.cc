// SQLite record files (format in record_file.h). The `requests` table and its
// row codec are storage's (storage/request_rows.h), so rows mean the same in a
// record file and in the daemon's database and can be copied between them.
#include <memory>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "loadgen/record_file.h"
#include "storage/request_rows.h"
#include "storage/sqlite_db.h"

namespace servelab::loadgen {
namespace {

using storage::SqliteDb;
using storage::Statement;
using storage::Transaction;
using storage::TxnMode;

constexpr char kLoadSpecTable[] = R"sql(
CREATE TABLE load_spec (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  spec_json TEXT NOT NULL
);
)sql";

class SqliteSink : public RecordSink {
 public:
  explicit SqliteSink(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}

  // One transaction per batch: one fsync, and a crash loses at most this batch.
  absl::Status Write(const std::vector<v1::RequestRecord>& records) override {
    SERVELAB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(*db_, TxnMode::kImmediate));
    SERVELAB_ASSIGN_OR_RETURN(Statement insert, db_->Prepare(storage::InsertRequestSql()));
    for (const v1::RequestRecord& r : records) {
      insert.Reset();
      storage::BindRequestRow(r, insert);
      SERVELAB_RETURN_IF_ERROR(insert.Run());
    }
    return txn.Commit();
  }

 private:
  std::unique_ptr<SqliteDb> db_;
};

absl::Status WriteSpec(SqliteDb& db, const v1::ExperimentSpec& spec) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string spec_json;
  if (!google::protobuf::util::MessageToJsonString(spec, &spec_json, options).ok()) {
    return absl::InternalError("cannot serialize the spec");
  }
  SERVELAB_ASSIGN_OR_RETURN(Statement put,
                            db.Prepare("INSERT INTO load_spec (id, spec_json) VALUES (1, ?1)"));
  put.BindText(1, spec_json);
  return put.Run();
}

absl::Status ReadSpec(SqliteDb& db, v1::ExperimentSpec& spec) {
  SERVELAB_ASSIGN_OR_RETURN(Statement get,
                            db.Prepare("SELECT spec_json FROM load_spec WHERE id = 1"));
  SERVELAB_ASSIGN_OR_RETURN(bool row, get.Step());
  if (!row) return absl::OkStatus();
  std::string json(get.ColumnText(0));
  if (!google::protobuf::util::JsonStringToMessage(json.empty() ? "{}" : json, &spec).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(db.path(), ": bad load_spec row"));
  }
  return absl::OkStatus();
}

// The relation to read records from: the requests table itself, or a view
// that shows a file in an older layout in the current columns, so it is read
// with the same codec. Older layouts: `idx` before it was named
// request_index; queued_ns kept in a side table `load_records_extra` before
// it was a column (0 where the side row is missing); no `repeat` column
// before workload.repeats (every row is run 1).
absl::StatusOr<std::string> RequestsSource(SqliteDb& db) {
  absl::flat_hash_set<std::string> columns;
  {
    SERVELAB_ASSIGN_OR_RETURN(Statement info,
                              db.Prepare("SELECT name FROM pragma_table_info('requests')"));
    while (true) {
      SERVELAB_ASSIGN_OR_RETURN(bool row, info.Step());
      if (!row) break;
      columns.emplace(info.ColumnText(0));
    }
  }
  if (columns.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(db.path(), " has no requests table: not a servelab-load record file"));
  }
  if (columns.contains("request_index") && columns.contains("queued_ns") &&
      columns.contains("repeat")) {
    return std::string("main.requests");
  }
  const std::string index = columns.contains("request_index") ? "request_index" : "idx";
  std::string join;
  if (!columns.contains("queued_ns")) {
    SERVELAB_ASSIGN_OR_RETURN(
        int64_t side_table,
        db.QueryInt("SELECT count(*) FROM sqlite_master WHERE name = 'load_records_extra'"));
    if (side_table == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          db.path(), ": the requests table has neither queued_ns nor a load_records_extra table"));
    }
    join = absl::StrCat(" LEFT JOIN main.load_records_extra e ON e.experiment_id = r.experiment_id",
                        " AND e.phase = r.phase AND e.attempt = r.attempt AND e.idx = r.", index);
  }
  std::string select;
  for (const storage::RequestColumn& c : storage::RequestColumns()) {
    std::string expr = absl::StrCat("r.", std::string(c.name));
    if (c.name == "request_index") expr = absl::StrCat("r.", index, " AS request_index");
    if (c.name == "queued_ns" && !join.empty()) expr = "COALESCE(e.queued_ns, 0) AS queued_ns";
    if (c.name == "repeat" && !columns.contains("repeat")) expr = "1 AS repeat";
    absl::StrAppend(&select, select.empty() ? "" : ", ", expr);
  }
  SERVELAB_RETURN_IF_ERROR(db.Exec(absl::StrCat("CREATE TEMP VIEW older_requests AS SELECT ",
                                                select, " FROM main.requests r", join)));
  return std::string("temp.older_requests");
}

}  // namespace

absl::StatusOr<std::unique_ptr<RecordSink>> OpenSqliteRecordFile(const std::string& path,
                                                                 const v1::ExperimentSpec& spec) {
  SERVELAB_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path, {}));
  {
    SERVELAB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(*db, TxnMode::kImmediate));
    SERVELAB_RETURN_IF_ERROR(db->Exec(storage::CreateRequestsTableSql()));
    SERVELAB_RETURN_IF_ERROR(db->Exec(kLoadSpecTable));
    SERVELAB_RETURN_IF_ERROR(WriteSpec(*db, spec));
    SERVELAB_RETURN_IF_ERROR(txn.Commit());
  }
  return std::make_unique<SqliteSink>(std::move(db));
}

absl::StatusOr<RecordFile> ReadSqliteRecordFile(const std::string& path) {
  SqliteDb::Options options;
  options.read_only = true;
  SERVELAB_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path, options));
  RecordFile file;
  SERVELAB_RETURN_IF_ERROR(ReadSpec(*db, file.spec));
  SERVELAB_ASSIGN_OR_RETURN(std::string source, RequestsSource(*db));
  SERVELAB_ASSIGN_OR_RETURN(
      Statement list,
      db->Prepare(absl::StrCat("SELECT ", storage::RequestColumnList(), " FROM ", source,
                               " ORDER BY phase, attempt, repeat, request_index")));
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(bool row, list.Step());
    if (!row) break;
    absl::Status status = storage::ReadRequestRow(list, file.records.emplace_back());
    if (!status.ok())
      return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
  }
  return file;
}

}  // namespace servelab::loadgen
