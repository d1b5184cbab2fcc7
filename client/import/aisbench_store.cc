#include "client/import/aisbench_store.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/import/npy.h"
#include "common/status_macros.h"
#include "storage/sqlite_db.h"

namespace servelab::client::import {

namespace {

absl::StatusOr<NumpyStore> ReadRows(const std::string& db_path) {
  storage::SqliteDb::Options options;
  options.read_only = true;
  SERVELAB_ASSIGN_OR_RETURN(auto db, storage::SqliteDb::Open(db_path, options));
  SERVELAB_ASSIGN_OR_RETURN(
      int64_t tables,
      db->QueryInt("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='numpy_store'"));
  if (tables == 0) {
    return absl::InvalidArgumentError("no numpy_store table: not an AISBench time point file");
  }
  SERVELAB_ASSIGN_OR_RETURN(storage::Statement rows,
                            db->Prepare("SELECT id, arr_blob FROM numpy_store ORDER BY id"));
  NumpyStore store;
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(bool has_row, rows.Step());
    if (!has_row) break;
    int64_t id = rows.ColumnInt(0);
    absl::StatusOr<std::vector<double>> values = DecodeNpyFloat64(rows.ColumnBlob(1));
    if (!values.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("numpy_store row ", id, ": ", values.status().message()));
    }
    store.emplace(id, *std::move(values));
  }
  return store;
}

}  // namespace

absl::StatusOr<NumpyStore> ReadAisbenchNumpyStore(const std::string& db_path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(db_path, ec)) {
    return absl::NotFoundError(absl::StrCat("AISBench time point file ", db_path, " not found"));
  }
  absl::StatusOr<NumpyStore> store = ReadRows(db_path);
  // SQLite's messages do not name the file; the reader needs to know which.
  if (!store.ok()) {
    return absl::Status(store.status().code(),
                        absl::StrCat(db_path, ": ", store.status().message()));
  }
  return store;
}

}  // namespace servelab::client::import
