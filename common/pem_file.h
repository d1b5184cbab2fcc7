// ReadPemFile: the content of a PEM file (a TLS certificate, key or CA),
// checked to be a readable regular file holding a PEM block. Shared by
// servelabd's --tls-cert/--tls-key and the CLI's --tls-ca.
//
//   SERVELAB_ASSIGN_OR_RETURN(std::string pem, ReadPemFile(path));
//
// Errors: INVALID_ARGUMENT "PATH: not a readable file" or "PATH: not a PEM
// file"; callers put the flag in front. Thread-safe.
#ifndef SERVELAB_COMMON_PEM_FILE_H_
#define SERVELAB_COMMON_PEM_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace servelab {

absl::StatusOr<std::string> ReadPemFile(const std::string& path);

}  // namespace servelab

#endif  // SERVELAB_COMMON_PEM_FILE_H_
