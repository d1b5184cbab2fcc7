// Reads a result file from disk and parses it (import.h), together with the
// side files it refers to, so `servelab import` has one call per file:
//
//   SERVELAB_ASSIGN_OR_RETURN(ImportedRun run, ImportResultFile(Tool::kAisbench, path));
//
// For AISBench, each db_name its lines refer to is read from
// <dir of path>/db_data/<db_name>, else <dir>/tmp/tmp_<db_name>, where
// AISBench's summarizer looks (summarizers/default_perf.py,
// _load_details_perf_data). Runs on the caller's thread and does file I/O.
#ifndef SERVELAB_CLIENT_IMPORT_IMPORT_FILE_H_
#define SERVELAB_CLIENT_IMPORT_IMPORT_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "client/import/import.h"

namespace servelab::client::import {

// NOT_FOUND when `path` (or a referenced side file) cannot be read, as
// "<path> ..."; otherwise ParseResultFile's errors.
absl::StatusOr<ImportedRun> ImportResultFile(Tool tool, const std::string& path);

}  // namespace servelab::client::import

#endif  // SERVELAB_CLIENT_IMPORT_IMPORT_FILE_H_
