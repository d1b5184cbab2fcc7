#include "daemon/engines/http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace servelab::engines {
namespace {

// Closes the socket on every return path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Waits for `events` on `fd` until `deadline`; DEADLINE_EXCEEDED on timeout.
absl::Status WaitFor(int fd, short events, absl::Time deadline, absl::string_view what) {
  while (true) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat("timed out ", what));
    }
    pollfd p{fd, events, 0};
    int ms = static_cast<int>(std::max<int64_t>(1, absl::ToInt64Milliseconds(left)));
    int n = poll(&p, 1, ms);
    if (n > 0) return absl::OkStatus();
    if (n < 0 && errno != EINTR) {
      return absl::UnavailableError(absl::StrCat("poll: ", std::strerror(errno)));
    }
  }
}

absl::StatusOr<std::string> DecodeChunked(absl::string_view body) {
  std::string out;
  while (true) {
    size_t eol = body.find("\r\n");
    if (eol == absl::string_view::npos) return absl::InternalError("truncated chunked body");
    absl::string_view size_text = body.substr(0, eol);
    size_text = size_text.substr(0, size_text.find(';'));  // Chunk extensions.
    uint64_t size = 0;
    if (!absl::SimpleHexAtoi(absl::StripAsciiWhitespace(size_text), &size)) {
      return absl::InternalError("bad chunk size");
    }
    body.remove_prefix(eol + 2);
    if (size == 0) return out;
    if (body.size() < size + 2) return absl::InternalError("truncated chunked body");
    out.append(body.data(), size);
    body.remove_prefix(size + 2);
  }
}

// An IPv4 address for `host`: dotted quad, else the resolver's first.
absl::StatusOr<in_addr> ResolveIpv4(const std::string& host) {
  in_addr address{};
  if (inet_pton(AF_INET, host.c_str(), &address) == 1) return address;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve host \"", host, "\": ", gai_strerror(rc)));
  }
  address = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr;
  freeaddrinfo(found);
  return address;
}

absl::StatusOr<HttpResponse> Exchange(const std::string& host, int port, absl::string_view method,
                                      absl::string_view path, absl::string_view body,
                                      bool send_body, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  const std::string where = absl::StrCat(method, " http://", host, ":", port, path);
  if (port <= 0 || port > 65535) return absl::InvalidArgumentError("bad port in " + where);
  absl::StatusOr<in_addr> address = ResolveIpv4(host);
  if (!address.ok())
    return absl::UnavailableError(absl::StrCat(where, ": ", address.status().message()));

  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr = *address;
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS) {
      return absl::UnavailableError(absl::StrCat(where, ": connect: ", std::strerror(errno)));
    }
    absl::Status ready = WaitFor(fd.get(), POLLOUT, deadline, "connecting for " + where);
    if (!ready.ok()) return ready;
    int error = 0;
    socklen_t len = sizeof(error);
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) {
      return absl::UnavailableError(absl::StrCat(where, ": connect: ", std::strerror(error)));
    }
  }

  std::string request = absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: ", host, ":", port,
                                     "\r\nConnection: close\r\nAccept: */*\r\n");
  if (send_body) {
    absl::StrAppend(&request, "Content-Type: application/json\r\nContent-Length: ", body.size(),
                    "\r\n");
  }
  absl::StrAppend(&request, "\r\n", body);
  absl::string_view pending = request;
  while (!pending.empty()) {
    ssize_t n = send(fd.get(), pending.data(), pending.size(), MSG_NOSIGNAL);
    if (n > 0) {
      pending.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      absl::Status ready = WaitFor(fd.get(), POLLOUT, deadline, "sending " + where);
      if (!ready.ok()) return ready;
    } else {
      return absl::UnavailableError(absl::StrCat(where, ": send: ", std::strerror(errno)));
    }
  }

  // With Connection: close the response ends where the server closes.
  std::string raw;
  char buffer[16 << 10];
  while (true) {
    ssize_t n = recv(fd.get(), buffer, sizeof(buffer), 0);
    if (n > 0) {
      raw.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno == EAGAIN || errno == EINTR) {
      absl::Status ready = WaitFor(fd.get(), POLLIN, deadline, "waiting for " + where);
      if (!ready.ok()) return ready;
    } else {
      return absl::UnavailableError(absl::StrCat(where, ": recv: ", std::strerror(errno)));
    }
  }
  if (raw.empty()) return absl::UnavailableError(where + ": connection closed without a response");
  absl::StatusOr<HttpResponse> response = ParseHttpResponse(raw);
  if (!response.ok()) {
    return absl::Status(response.status().code(),
                        absl::StrCat(where, ": ", response.status().message()));
  }
  return response;
}

}  // namespace

absl::StatusOr<HttpResponse> ParseHttpResponse(absl::string_view raw) {
  size_t header_end = raw.find("\r\n\r\n");
  if (header_end == absl::string_view::npos) {
    return absl::UnavailableError("response ended inside its headers");
  }
  std::vector<absl::string_view> lines =
      absl::StrSplit(raw.substr(0, header_end), absl::ByString("\r\n"));
  // "HTTP/1.1 200 OK"
  std::vector<absl::string_view> status_line = absl::StrSplit(lines[0], absl::MaxSplits(' ', 2));
  HttpResponse response;
  if (status_line.size() < 2 || !absl::StartsWith(status_line[0], "HTTP/") ||
      !absl::SimpleAtoi(status_line[1], &response.status)) {
    return absl::InternalError(absl::StrCat("not an HTTP status line: \"", lines[0], "\""));
  }
  bool chunked = false;
  int64_t content_length = -1;
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos) continue;
    absl::string_view name = absl::StripAsciiWhitespace(lines[i].substr(0, colon));
    absl::string_view value = absl::StripAsciiWhitespace(lines[i].substr(colon + 1));
    if (absl::EqualsIgnoreCase(name, "content-length")) {
      if (!absl::SimpleAtoi(value, &content_length)) {
        return absl::InternalError("bad Content-Length");
      }
    } else if (absl::EqualsIgnoreCase(name, "transfer-encoding")) {
      chunked = absl::StrContains(absl::AsciiStrToLower(value), "chunked");
    }
  }
  absl::string_view body = raw.substr(header_end + 4);
  if (chunked) {
    absl::StatusOr<std::string> decoded = DecodeChunked(body);
    if (!decoded.ok()) return absl::UnavailableError(decoded.status().message());
    response.body = *std::move(decoded);
  } else if (content_length >= 0) {
    if (body.size() < static_cast<size_t>(content_length)) {
      return absl::UnavailableError(
          absl::StrCat("body truncated at ", body.size(), " of ", content_length, " bytes"));
    }
    response.body = std::string(body.substr(0, static_cast<size_t>(content_length)));
  } else {
    response.body = std::string(body);
  }
  return response;
}

absl::StatusOr<HttpResponse> HttpGet(int port, absl::string_view path, absl::Duration timeout) {
  return HttpGet(kLoopbackHost, port, path, timeout);
}

absl::StatusOr<HttpResponse> HttpGet(const std::string& host, int port, absl::string_view path,
                                     absl::Duration timeout) {
  return Exchange(host, port, "GET", path, "", /*send_body=*/false, timeout);
}

absl::StatusOr<HttpResponse> HttpPost(int port, absl::string_view path, absl::string_view json_body,
                                      absl::Duration timeout) {
  return HttpPost(kLoopbackHost, port, path, json_body, timeout);
}

absl::StatusOr<HttpResponse> HttpPost(const std::string& host, int port, absl::string_view path,
                                      absl::string_view json_body, absl::Duration timeout) {
  return Exchange(host, port, "POST", path, json_body, /*send_body=*/true, timeout);
}

}  // namespace servelab::engines
