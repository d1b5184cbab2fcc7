#include "tests/sim/sim_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace servelab::sim::testing {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Decodes a chunked body; sets complete when the terminating chunk was seen.
std::string Dechunk(const std::string& raw, bool& complete) {
  std::string out;
  size_t pos = 0;
  complete = false;
  while (true) {
    size_t eol = raw.find("\r\n", pos);
    if (eol == std::string::npos) return out;
    size_t size = std::strtoul(raw.substr(pos, eol - pos).c_str(), nullptr, 16);
    if (size == 0) {
      complete = true;
      return out;
    }
    if (eol + 2 + size > raw.size()) {
      out += raw.substr(eol + 2);
      return out;
    }
    out += raw.substr(eol + 2, size);
    pos = eol + 2 + size + 2;
  }
}

}  // namespace

HttpResponse Http(int port, const std::string& method, const std::string& path,
                  const std::string& body,
                  const std::vector<std::pair<std::string, std::string>>& headers,
                  absl::Duration timeout) {
  std::ostringstream req;
  req << method << " " << path << " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers) req << k << ": " << v << "\r\n";
  if (method == "POST") {
    req << "Content-Type: application/json\r\nContent-Length: " << body.size() << "\r\n";
  }
  req << "\r\n" << body;
  return RawHttp(port, req.str(), timeout);
}

HttpResponse RawHttp(int port, const std::string& data, absl::Duration timeout, bool half_close,
                     const RawPacing& pacing) {
  HttpResponse response;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (pacing.receive_buffer_bytes > 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &pacing.receive_buffer_bytes,
               sizeof(pacing.receive_buffer_bytes));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return response;
  }
  response.connected = true;
  const size_t split = std::min(pacing.split_at, data.size());
  if (split > 0) {
    send(fd, data.data(), split, MSG_NOSIGNAL);
    absl::SleepFor(pacing.pause);
  }
  send(fd, data.data() + split, data.size() - split, MSG_NOSIGNAL);
  if (half_close) shutdown(fd, SHUT_WR);
  absl::SleepFor(pacing.wait_before_reading);
  std::string raw;
  char buf[65536];
  while (true) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;  // EOF, reset or timeout
    raw.append(buf, n);
  }
  close(fd);
  size_t header_end = raw.find("\r\n\r\n");
  if (header_end == std::string::npos) return response;
  std::vector<std::string> lines = absl::StrSplit(raw.substr(0, header_end), "\r\n");
  if (lines.empty() || lines[0].size() < 12) return response;
  absl::SimpleAtoi(lines[0].substr(9, 3), &response.status);
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    std::string value = lines[i].substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    response.headers[Lower(lines[i].substr(0, colon))] = value;
  }
  std::string rest = raw.substr(header_end + 4);
  if (Lower(response.headers["transfer-encoding"]) == "chunked") {
    response.body = Dechunk(rest, response.complete);
  } else {
    response.body = rest;
    size_t length = 0;
    response.complete =
        absl::SimpleAtoi(response.headers["content-length"], &length) && rest.size() == length;
  }
  return response;
}

std::vector<std::string> SseData(const std::string& body) {
  std::vector<std::string> out;
  for (absl::string_view event : absl::StrSplit(body, "\n\n", absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&event, "data: ")) out.emplace_back(event);
  }
  return out;
}

double Metric(int port, const std::string& name) {
  HttpResponse r = Get(port, "/metrics");
  if (r.status != 200) return -1;
  double sum = 0;
  for (absl::string_view line : absl::StrSplit(r.body, '\n', absl::SkipEmpty())) {
    if (line.front() == '#') continue;
    if (!absl::ConsumePrefix(&line, name)) continue;
    if (line.front() != '{' && line.front() != ' ') continue;
    double v = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) sum += v;
  }
  return sum;
}

SimProcess::SimProcess(std::vector<std::string> flags) { Start(std::move(flags)); }

SimProcess::SimProcess(std::vector<std::string> flags, const std::string& yaml,
                       std::vector<std::string> env) {
  std::string config = dir_.File("sim.yaml");
  servelab::testing::WriteFile(config, yaml);
  flags.push_back("--config");
  flags.push_back(config);
  Start(std::move(flags), env);
}

void SimProcess::Start(std::vector<std::string> flags, const std::vector<std::string>& env) {
  std::string port_file = dir_.File("port");
  std::vector<std::string> argv = {servelab::testing::BinPath("servelab-sim"),
                                   "--port",
                                   "0",
                                   "--port-file",
                                   port_file,
                                   "--threads",
                                   "1"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  process_ = std::make_unique<servelab::testing::Process>(argv, dir_.File("sim"), env);
  if (servelab::testing::WaitFor(
          [&] { return servelab::testing::FileExists(port_file) || !process_->Running(); },
          absl::Seconds(10))) {
    absl::SimpleAtoi(absl::StripAsciiWhitespace(servelab::testing::ReadFile(port_file)), &port_);
  }
}

bool SimProcess::WaitHealthy(absl::Duration timeout) {
  return started() &&
         servelab::testing::WaitFor([&] { return Get(port_, "/health").status == 200; }, timeout);
}

}  // namespace servelab::sim::testing
