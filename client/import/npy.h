// Decoding of NumPy's .npy format (numpy/lib/format.py), as far as AISBench
// needs it: it stores each request's time points as np.save() of a 1-D
// float64 array (ais_bench/benchmark/openicl/icl_inferencer/output_handler/
// db_utils.py, save_numpy_to_db).
#ifndef SERVELAB_CLIENT_IMPORT_NPY_H_
#define SERVELAB_CLIENT_IMPORT_NPY_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace servelab::client::import {

// The values of a .npy blob holding a 1-D (or 0-D) little-endian float64
// array, format versions 1.0 to 3.0. INVALID_ARGUMENT saying what is wrong
// for anything else (another dtype, more dimensions, a short blob).
absl::StatusOr<std::vector<double>> DecodeNpyFloat64(std::string_view blob);

}  // namespace servelab::client::import

#endif  // SERVELAB_CLIENT_IMPORT_NPY_H_
