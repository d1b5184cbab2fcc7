// A self-signed certificate for 127.0.0.1 and localhost, made with the
// openssl tool, for tests of servelabd's TLS (gRPC and /metrics).
//
//   ASSERT_NO_FATAL_FAILURE(MakeCertificate(dir.File("cert.pem"), dir.File("key.pem")));
#ifndef SERVELAB_TESTS_TESTING_CERTIFICATE_H_
#define SERVELAB_TESTS_TESTING_CERTIFICATE_H_

#include <string>

namespace servelab::testing {

// Writes the PEM certificate and its unencrypted key; a fatal test failure
// when openssl fails.
void MakeCertificate(const std::string& cert_path, const std::string& key_path);

}  // namespace servelab::testing

#endif  // SERVELAB_TESTS_TESTING_CERTIFICATE_H_
