// A minimal blocking HTTP/1.0 GET for tests that scrape /metrics.
//
//   std::string body = HttpGet("127.0.0.1", port, "/metrics");
#ifndef SERVELAB_TESTS_DAEMON_HTTP_GET_H_
#define SERVELAB_TESTS_DAEMON_HTTP_GET_H_

#include <string>

namespace servelab::testing {

// The response (status line, headers and body); empty on a connection error.
std::string HttpGet(const std::string& host, int port, const std::string& path);

}  // namespace servelab::testing

#endif  // SERVELAB_TESTS_DAEMON_HTTP_GET_H_
