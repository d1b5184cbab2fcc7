// The `requests` table: raw per-request records, one row per RequestRecord.
// This file and request_rows.cc are the one definition of its columns and of
// the RequestRecord <-> row codec, shared by the daemon's store
// (sqlite_store.cc) and servelab-load's record files
// (loadgen/sqlite_record_file.cc), so a row means the same in both files.
//
//   SERVELAB_ASSIGN_OR_RETURN(Statement insert, db.Prepare(InsertRequestSql()));
//   BindRequestRow(record, insert);
//   SERVELAB_RETURN_IF_ERROR(insert.Run());
//
//   SERVELAB_ASSIGN_OR_RETURN(Statement list, db.Prepare(absl::StrCat(
//       "SELECT ", RequestColumnList(), " FROM requests ORDER BY phase, attempt, request_index")));
//   while (true) {
//     SERVELAB_ASSIGN_OR_RETURN(bool row, list.Step());
//     if (!row) break;
//     SERVELAB_RETURN_IF_ERROR(ReadRequestRow(list, records.emplace_back()));
//   }
//
// Encodings: each column is named after its RequestRecord field; enums are proto numbers; chunk_ns
// is a BLOB of little-endian int64, 8 bytes per chunk; load_start is unix nanoseconds, NULL when
// unset; cached_tokens keeps -1 ("not reported").
//
// The daemon's schema is owned by storage/migrations.cc, whose released steps
// are never edited: its `requests` table must have exactly RequestColumns()
// (request_rows_test checks it). A new RequestRecord field therefore needs a
// column here and a migration step that adds it.
#ifndef SERVELAB_STORAGE_REQUEST_ROWS_H_
#define SERVELAB_STORAGE_REQUEST_ROWS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "google/protobuf/repeated_field.h"
#include "google/protobuf/timestamp.pb.h"
#include "servelab/v1/result.pb.h"

namespace servelab::storage {

class Statement;

struct RequestColumn {
  std::string_view name;
  std::string_view type;  // The declared SQL type: INTEGER, TEXT or BLOB.
  bool not_null;
};

// The columns of `requests`, in table order, as PRAGMA table_info reports
// them; the primary key is (experiment_id, phase, attempt, request_index).
absl::Span<const RequestColumn> RequestColumns();

// "experiment_id, phase, ..., queued_ns": RequestColumns() for a SELECT.
const std::string& RequestColumnList();

// "INSERT INTO requests (<columns>) VALUES (?1, ..., ?N)".
const std::string& InsertRequestSql();

// CREATE TABLE requests of the current schema, for files without an
// experiments table (experiment_id references nothing). The daemon creates
// its table through its migrations instead.
const std::string& CreateRequestsTableSql();

// Binds every field of `record` to parameters 1..N of an InsertRequestSql()
// statement.
void BindRequestRow(const v1::RequestRecord& record, Statement& insert);

// Reads a row selected as RequestColumnList(), starting at column 0, into
// `record` (cleared first). INTERNAL for a corrupt chunk_ns blob.
absl::Status ReadRequestRow(const Statement& row, v1::RequestRecord& record);

// The chunk_ns encoding: fixed 8 bytes per value, byte order pinned so the
// file is portable. Decode fails with INTERNAL when the size is not a
// multiple of 8.
std::string EncodeChunkNs(const google::protobuf::RepeatedField<int64_t>& values);
absl::Status DecodeChunkNs(std::string_view bytes, google::protobuf::RepeatedField<int64_t>& out);

// Time columns of every table are unix nanoseconds. Saturates outside
// ~1678..2262, far beyond any time the daemon records.
int64_t ToUnixNanos(const google::protobuf::Timestamp& ts);
google::protobuf::Timestamp FromUnixNanos(int64_t ns);

}  // namespace servelab::storage

#endif  // SERVELAB_STORAGE_REQUEST_ROWS_H_
