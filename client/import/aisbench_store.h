// Reads the SQLite side file of an AISBench performance run, where its
// details lines keep each request's time points: performances/<model
// abbr>/db_data/<db_name>, table numpy_store (id INTEGER PRIMARY KEY,
// arr_blob BLOB), each blob an np.save() of a float64 array.
//
// Upstream (AISBench/benchmark): ais_bench/benchmark/openicl/icl_inferencer/
// output_handler/db_utils.py (init_db, save_numpy_to_db,
// load_all_numpy_from_db), used by output_handler/base_handler.py to write
// and by summarizers/default_perf.py to read, which falls back to
// tmp/tmp_<db_name> while a run has not finished.
#ifndef SERVELAB_CLIENT_IMPORT_AISBENCH_STORE_H_
#define SERVELAB_CLIENT_IMPORT_AISBENCH_STORE_H_

#include <string>

#include "absl/status/statusor.h"
#include "client/import/aisbench_details.h"

namespace servelab::client::import {

// Every row of `db_path`'s numpy_store, opened read-only. NOT_FOUND when the
// file does not exist; INVALID_ARGUMENT naming the file (and the row) when it
// has no numpy_store table or a blob is not a float64 .npy array; the
// storage layer's codes for SQLite failures.
absl::StatusOr<NumpyStore> ReadAisbenchNumpyStore(const std::string& db_path);

}  // namespace servelab::client::import

#endif  // SERVELAB_CLIENT_IMPORT_AISBENCH_STORE_H_
