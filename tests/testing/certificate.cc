#include "tests/testing/certificate.h"

#include <gtest/gtest.h>

#include "tests/testing/subprocess.h"

namespace servelab::testing {

void MakeCertificate(const std::string& cert_path, const std::string& key_path) {
  RunResult r = Run({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                     key_path, "-out", cert_path, "-days", "1", "-subj", "/CN=servelabd", "-addext",
                     "subjectAltName=IP:127.0.0.1,DNS:localhost"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace servelab::testing
