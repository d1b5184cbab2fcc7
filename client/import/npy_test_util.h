// Test-only: np.save() of a 1-D float64 array, byte for byte as NumPy writes
// format version 1.0 (numpy/lib/format.py: the header dict padded with spaces
// and a newline so magic + length + header is a multiple of 64 bytes).
#ifndef SERVELAB_CLIENT_IMPORT_NPY_TEST_UTIL_H_
#define SERVELAB_CLIENT_IMPORT_NPY_TEST_UTIL_H_

#include <cstring>
#include <string>
#include <vector>

namespace servelab::client::import::testing {

inline std::string NpyHeaderBlob(const std::string& dict, size_t data_bytes, char major = 1) {
  size_t len_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  size_t prefix = 8 + len_bytes;
  while ((prefix + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string blob = std::string("\x93NUMPY", 6);
  blob.push_back(major);
  blob.push_back(0);
  for (size_t i = 0; i < len_bytes; ++i)
    blob.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
  blob += header;
  blob.resize(blob.size() + data_bytes);
  return blob;
}

inline std::string EncodeNpyFloat64(const std::vector<double>& values, char major = 1) {
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (" +
                     std::to_string(values.size()) + ",), }";
  std::string blob = NpyHeaderBlob(dict, values.size() * sizeof(double), major);
  if (!values.empty()) {
    std::memcpy(blob.data() + blob.size() - values.size() * sizeof(double), values.data(),
                values.size() * sizeof(double));
  }
  return blob;
}

}  // namespace servelab::client::import::testing

#endif  // SERVELAB_CLIENT_IMPORT_NPY_TEST_UTIL_H_
