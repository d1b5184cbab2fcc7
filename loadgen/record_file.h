// Record files of servelab-load: a load's spec plus its raw records, so that
// `servelab-load analyze FILE` recomputes the analysis from the stored rows.
//
//   SERVELAB_ASSIGN_OR_RETURN(auto sink, OpenRecordFile("run.sqlite", spec));
//   ... runner.Run(..., *sink) ...
//   SERVELAB_ASSIGN_OR_RETURN(RecordFile f, ReadRecordFile("run.sqlite"));
//
// Formats, chosen by extension:
// - .sqlite / .db: table `requests` with exactly the daemon's columns and
//   encodings, defined once in storage/request_rows.h (one row per
//   RequestRecord, queued_ns included), plus `load_spec` (one row: the
//   ExperimentSpec as JSON). One transaction per batch, WAL,
//   synchronous=FULL. Files of older layouts are still read: with the index
//   column named `idx`, and with queued_ns in a side table `load_records_extra`.
//   A .jsonl file written before `index` became `request_index` is not.
// - .jsonl: first line {"spec": <ExperimentSpec>}, then one RequestRecord per
//   line (proto JSON, proto field names); each batch is flushed and fsynced.
//
// Errors: ALREADY_EXISTS when the file exists (records of two loads are never
// mixed), INVALID_ARGUMENT for an unknown extension or a file that is not a
// record file, NOT_FOUND when reading a missing file; database errors as
// storage/sqlite_db.h maps them (RESOURCE_EXHAUSTED when the disk is full,
// UNAVAILABLE when busy, INTERNAL otherwise), I/O errors INTERNAL.
#ifndef SERVELAB_LOADGEN_RECORD_FILE_H_
#define SERVELAB_LOADGEN_RECORD_FILE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "loadgen/record_sink.h"
#include "servelab/v1/result.pb.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::loadgen {

absl::StatusOr<std::unique_ptr<RecordSink>> OpenRecordFile(const std::string& path,
                                                           const v1::ExperimentSpec& spec);

struct RecordFile {
  v1::ExperimentSpec spec;
  // Ordered by phase, attempt, index.
  std::vector<v1::RequestRecord> records;
};

absl::StatusOr<RecordFile> ReadRecordFile(const std::string& path);

// Per format, for the dispatch above.
absl::StatusOr<std::unique_ptr<RecordSink>> OpenSqliteRecordFile(const std::string& path,
                                                                 const v1::ExperimentSpec& spec);
absl::StatusOr<RecordFile> ReadSqliteRecordFile(const std::string& path);
absl::StatusOr<std::unique_ptr<RecordSink>> OpenJsonlRecordFile(const std::string& path,
                                                                const v1::ExperimentSpec& spec);
absl::StatusOr<RecordFile> ReadJsonlRecordFile(const std::string& path);

}  // namespace servelab::loadgen

#endif  // SERVELAB_LOADGEN_RECORD_FILE_H_
