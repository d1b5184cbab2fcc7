#include "loadgen/fake_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace servelab::loadgen {
namespace {

bool SendAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string Chunk(const std::string& data) {
  char size[32];
  snprintf(size, sizeof size, "%zx\r\n", data.size());
  return absl::StrCat(size, data, "\r\n");
}

int IntField(const std::string& body, const std::string& key, int fallback) {
  size_t at = body.find("\"" + key + "\":");
  if (at == std::string::npos) return fallback;
  return std::atoi(body.c_str() + at + key.size() + 3);
}

int PromptTokens(const std::string& body) {
  size_t at = body.find("\"prompt\":[");
  if (at == std::string::npos) return 0;
  size_t end = body.find(']', at);
  int commas = 0;
  for (size_t i = at; i < end; ++i) commas += body[i] == ',';
  return commas + 1;
}

}  // namespace

FakeServer::FakeServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 1024) != 0) {
    std::abort();
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

FakeServer::~FakeServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  acceptor_.join();
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

std::string FakeServer::url() const { return absl::StrCat("http://127.0.0.1:", port_); }

void FakeServer::set_mode(Mode mode) {
  absl::MutexLock lock(&mu_);
  mode_ = mode;
}
void FakeServer::set_token_gap(absl::Duration gap) {
  absl::MutexLock lock(&mu_);
  token_gap_ = gap;
}
void FakeServer::set_cached_tokens(int cached) {
  absl::MutexLock lock(&mu_);
  cached_ = cached;
}
std::vector<std::string> FakeServer::heads() const {
  absl::MutexLock lock(&mu_);
  return heads_;
}
std::vector<std::string> FakeServer::bodies() const {
  absl::MutexLock lock(&mu_);
  return bodies_;
}

void FakeServer::AcceptLoop() {
  while (!Stopping()) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (Stopping()) return;
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ++connections_;
    absl::MutexLock lock(&mu_);
    fds_.push_back(fd);
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void FakeServer::Serve(int fd) {
  struct Closer {
    FakeServer* self;
    int fd;
    ~Closer() {
      absl::MutexLock lock(&self->mu_);
      std::erase(self->fds_, fd);
      ::close(fd);
    }
  } closer{this, fd};
  std::string in;
  char buf[65536];
  while (!Stopping()) {
    size_t head_end;
    while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
    std::string head = in.substr(0, head_end);
    size_t length = 0;
    for (absl::string_view line : absl::StrSplit(head, "\r\n")) {
      std::string lower = absl::AsciiStrToLower(line);
      if (lower.rfind("content-length:", 0) == 0) {
        absl::SimpleAtoi(absl::StripAsciiWhitespace(lower.substr(15)), &length);
      }
    }
    while (in.size() < head_end + 4 + length) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
    std::string body = in.substr(head_end + 4, length);
    in.erase(0, head_end + 4 + length);

    if (head.rfind("GET /v1/models", 0) == 0) {
      ++model_lookups_;
      std::string models = R"({"object":"list","data":[{"id":"fake-model","object":"model"}]})";
      if (!SendAll(fd, absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                    "Content-Length: ",
                                    models.size(), "\r\n\r\n", models))) {
        return;
      }
      continue;
    }
    Mode mode;
    absl::Duration gap;
    int cached;
    {
      absl::MutexLock lock(&mu_);
      mode = mode_;
      gap = token_gap_;
      cached = cached_;
      heads_.push_back(head);
      bodies_.push_back(body);
    }
    ++requests_;
    int now = ++in_flight_;
    for (int m = max_in_flight_.load(); now > m && !max_in_flight_.compare_exchange_weak(m, now);) {
    }
    struct Leave {
      std::atomic<int>& n;
      ~Leave() { --n; }
    } leave{in_flight_};

    if (mode == Mode::kHttp500) {
      std::string err = R"({"error":{"message":"injected failure","type":"server_error"}})";
      if (!SendAll(fd, absl::StrCat("HTTP/1.1 500 Internal Server Error\r\nContent-Type: "
                                    "application/json\r\nContent-Length: ",
                                    err.size(), "\r\n\r\n", err))) {
        return;
      }
      continue;
    }
    // kUntilClose: no length and no chunks; the body ends when the
    // connection does, as HTTP/1.1 allows.
    const bool chunked = mode != Mode::kUntilClose;
    auto frame = [chunked](const std::string& event) { return chunked ? Chunk(event) : event; };
    if (!SendAll(fd, chunked ? "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n"
                             : "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                               "Connection: close\r\n\r\n")) {
      return;
    }
    if (mode == Mode::kHangAfterFirstToken &&
        !SendAll(fd, frame(R"(data: {"id":"c","choices":[{"index":0,"text":" w0"}]})"
                           "\n\n"))) {
      return;
    }
    if (mode == Mode::kHang || mode == Mode::kHangAfterFirstToken) {
      while (!Stopping()) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);  // Until the client gives up.
        if (n <= 0) return;
      }
      return;
    }
    int tokens = IntField(body, "max_tokens", 16);
    for (int i = 0; i < tokens; ++i) {
      if (mode == Mode::kDropMidStream && i == tokens / 2) return;
      absl::SleepFor(gap);
      if (!SendAll(fd,
                   frame(absl::StrCat("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\" w",
                                      i, "\",\"finish_reason\":null}]}\n\n")))) {
        return;
      }
    }
    std::string usage = absl::StrCat(
        "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":", PromptTokens(body),
        ",\"completion_tokens\":", tokens, ",\"total_tokens\":", PromptTokens(body) + tokens,
        ",\"prompt_tokens_details\":{\"cached_tokens\":", cached, "}}}\n\n");
    std::string tail = frame(usage);
    if (mode != Mode::kNoDone) tail += frame("data: [DONE]\n\n");
    if (chunked) tail += "0\r\n\r\n";
    if (!SendAll(fd, tail) || !chunked) return;
  }
}

}  // namespace servelab::loadgen
