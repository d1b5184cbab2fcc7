#include "loadgen/load_runner.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <thread>
#include <unordered_set>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "analysis/percentile.h"
#include "common/receive_stamp.h"
#include "google/protobuf/util/time_util.h"
#include "loadgen/beast.h"
#include "loadgen/realtime.h"
#include "loadgen/request.h"
#include "loadgen/sse.h"

namespace servelab::loadgen {
namespace {

using Clock = std::chrono::steady_clock;
using asio::awaitable;
using asio::use_awaitable;
using beast::error_code;

// An arrival's timer fires this much early, and the io thread spins the
// rest: a timer that wakes an idle vCPU is 30-80 us late, which would all
// be schedule lag (issue 9, P4; docs/design.md §10). The spin costs at most
// this much CPU per arrival, and only when the thread would sleep anyway.
constexpr std::chrono::microseconds kArrivalSpin(100);

// A socket read at most, and the body's window in the parser. Per
// connection: 2,000 streams hold 2,000 of each.
constexpr size_t kReadChunk = 8 * 1024;
constexpr size_t kMaxErrorBody = 512;

struct Connection {
  explicit Connection(asio::io_context& ioc) : stream(ioc) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  int64_t served = 0;
  // When the bytes of the last read reached the socket (ReadSomeStamped).
  Clock::time_point received;
};

// One read of the connection's socket into its buffer, stamped with when the
// bytes reached the socket: a chunk's time is its arrival, not when this
// thread got to it (common/receive_stamp.h). Tries the read first and waits
// for the socket only when nothing is there, as Asio's own reads do.
awaitable<error_code> ReadSomeStamped(Connection& conn) {
  tcp::socket& socket = conn.stream.socket();
  while (true) {
    const auto space = conn.buffer.prepare(kReadChunk);
    const StampedRead r =
        ReceiveStamped(socket.native_handle(), space.data(), space.size(), MSG_DONTWAIT);
    if (r.bytes > 0) {
      conn.buffer.commit(static_cast<size_t>(r.bytes));
      conn.received = r.received;
      co_return error_code{};
    }
    if (r.bytes == 0) co_return asio::error::eof;
    if (r.error == EINTR) continue;
    if (r.error != EAGAIN && r.error != EWOULDBLOCK) {
      co_return error_code(r.error, asio::error::get_system_category());
    }
    error_code ec;
    co_await socket.async_wait(tcp::socket::wait_read, asio::redirect_error(use_awaitable, ec));
    if (ec) co_return ec;
  }
}

// The response's header into `parser`, as http::async_read_header would, but
// with stamped reads: a server that sends its header just before the first
// token (the sim does, after prefill) puts both in one read, and the token
// then carries that read's stamp (ReadBody).
awaitable<error_code> ReadHeaderStamped(Connection& conn,
                                        http::response_parser<http::buffer_body>& parser) {
  while (true) {
    error_code ec;
    if (conn.buffer.size() > 0) {
      const size_t used = parser.put(conn.buffer.data(), ec);
      conn.buffer.consume(used);
      if (ec != http::error::need_more) {
        if (ec || parser.is_header_done()) co_return ec;
        if (used > 0) continue;  // More of the header may be buffered.
      }
    }
    ec = co_await ReadSomeStamped(conn);
    if (ec == asio::error::eof) {
      co_return parser.got_some() ? http::error::partial_message : http::error::end_of_stream;
    }
    if (ec) co_return ec;
  }
}

// A request's timeout: one timer per request that closes the request's
// connection when it fires. Beast's tcp_stream would instead arm and cancel
// a timer around every read, one per streamed chunk, each cancel one more
// handler through the scheduler (issue 9, P3; docs/design.md §10).
class RequestDeadline {
 public:
  RequestDeadline(asio::io_context& ioc, Clock::time_point at) : timer_(ioc, at) {
    // Asio runs a cancelled wait's handler after this object may be gone:
    // the handler touches only the shared state.
    timer_.async_wait([state = state_](const error_code& ec) {
      if (ec) return;  // Cancelled: the request ended in time.
      state->expired = true;
      if (state->socket != nullptr) state->socket->close(state->ignored);
    });
  }
  ~RequestDeadline() { state_->socket = nullptr; }
  RequestDeadline(const RequestDeadline&) = delete;
  RequestDeadline& operator=(const RequestDeadline&) = delete;

  // The connection the request is on (nullptr: none; it went back to the
  // pool or was dropped). One found after the deadline is closed at once.
  void Guard(tcp::socket* socket) {
    state_->socket = socket;
    if (state_->expired && socket != nullptr) socket->close(state_->ignored);
  }
  bool expired() const { return state_->expired; }

 private:
  struct State {
    bool expired = false;
    tcp::socket* socket = nullptr;
    error_code ignored;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
  asio::steady_timer timer_;
};

// Many concurrent streams need many descriptors; the default soft limit
// (often 1024) is far below the hard one.
void RaiseOpenFileLimit() {
  rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

// The message of an OpenAI-style error body, or the body's start.
std::string ErrorText(int status, const std::string& body) {
  StreamChunk c = ParseStreamChunk(body, v1::API_COMPLETIONS);
  std::string detail = !c.error.empty() && c.error.rfind("malformed", 0) != 0
                           ? c.error
                           : body.substr(0, kMaxErrorBody);
  return absl::StrCat("HTTP ", status, ": ", detail);
}

// The first "id" of a /v1/models answer.
std::string FirstModelId(const std::string& body) {
  size_t key = body.find("\"id\"");
  if (key == std::string::npos) return "";
  size_t open = body.find('"', body.find(':', key) + 1);
  if (open == std::string::npos) return "";
  size_t close = body.find('"', open + 1);
  if (close == std::string::npos) return "";
  return body.substr(open + 1, close - open - 1);
}

// What one request's response body said, besides what goes in its record.
struct StreamOutcome {
  bool saw_done = false;     // the SSE stream's [DONE]
  std::string stream_error;  // the first error chunk of a 200 stream
  std::string error_body;    // the start of a non-200 body
};

}  // namespace

std::string RequestId(const std::string& experiment_id, v1::Phase phase, int attempt, int index) {
  return absl::StrCat(experiment_id, "/", static_cast<int>(phase), "/", attempt, "/", index);
}

class LoadRunner::Impl {
 public:
  Impl(LoadOptions options, Endpoint endpoint)
      : options_(std::move(options)), endpoint_(std::move(endpoint)) {}

  absl::StatusOr<LoadSummary> Run(const PromptSet& prompts, const std::vector<int64_t>& planned,
                                  RecordSink& sink);
  void Cancel() {
    cancel_requested_ = true;
    asio::post(ioc_, [this] { DoCancel(); });
  }
  LoadProgress progress() const { return {sent_.load(), completed_.load(), failed_.load()}; }

 private:
  awaitable<void> Main(absl::Status* check_status);
  awaitable<absl::Status> CheckEndpoint();
  awaitable<void> Preconnect(int count);
  awaitable<void> Dispatch();
  // `not_before`: the planned arrival when the timer fired early; the
  // request is rendered first, then sent at that time.
  awaitable<void> Send(int index, int64_t queued_ns, Clock::time_point not_before);
  // Send's steps on one connection: the request out and the response's
  // header in; the body read into `r` and `stream`; the error to record
  // ("" for a success).
  awaitable<error_code> WriteAndReadHeader(Connection& conn, const std::string& wire,
                                           http::response_parser<http::buffer_body>& parser);
  class Body;
  template <typename Handler>
  class ReadRest;
  awaitable<error_code> ReadBody(Connection& conn, http::response_parser<http::buffer_body>& parser,
                                 int status, v1::RequestRecord& r, StreamOutcome& stream);
  std::string AttemptError(const error_code& ec, int status, const StreamOutcome& stream) const;
  // The request is over: completes its record, returns a connection that can
  // serve again (`keep`) to the pool, and counts the outcome.
  void EndSend(v1::RequestRecord r, int status, std::string error, bool saw_done,
               std::unique_ptr<Connection> conn, bool keep);
  awaitable<error_code> Connect(Connection& conn);
  // Waits on wake_timer_ until woken by a finishing request or a cancel.
  awaitable<void> WaitForWake();
  void Wake() { wake_timer_->cancel(); }
  void DoCancel();
  void Finish(v1::RequestRecord record, bool completed);
  v1::RequestRecord NewRecord(int index) const;
  int64_t NanosecondsSinceStart(Clock::time_point t) const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - t0_).count();
  }
  int64_t SinceStart() const { return NanosecondsSinceStart(Clock::now()); }
  void WriterLoop(RecordSink& sink);
  // first_token_read_lags_ into the summary's percentiles.
  void SummarizeReadLags();

  // Constant after construction.
  const LoadOptions options_;
  const Endpoint endpoint_;

  asio::io_context ioc_{1};

  // Used only on the io thread (the thread in Run).
  tcp::resolver::results_type endpoints_;
  const PromptSet* prompts_ = nullptr;
  const std::vector<int64_t>* planned_ = nullptr;
  Clock::time_point t0_;
  google::protobuf::Timestamp load_start_;
  std::unique_ptr<asio::steady_timer> wake_timer_;
  std::unique_ptr<asio::steady_timer> arrival_timer_;
  int in_flight_ = 0;
  int connecting_ = 0;
  bool cancelled_ = false;
  std::string model_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::unordered_set<Connection*> active_;
  // Per request, in nanoseconds: its first token's read time less its
  // receive stamp, never below 0.
  std::vector<double> first_token_read_lags_;
  LoadSummary summary_;

  // Shared with other threads.
  std::atomic<bool> cancel_requested_{false};
  std::atomic<int64_t> sent_{0}, completed_{0}, failed_{0};
  absl::Mutex mu_;
  std::vector<v1::RequestRecord> pending_ ABSL_GUARDED_BY(mu_);
  bool writer_stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status sink_status_ ABSL_GUARDED_BY(mu_);
};

void LoadRunner::Impl::DoCancel() {
  if (!cancel_requested_ || cancelled_) return;
  cancelled_ = true;
  for (Connection* c : active_) c->stream.cancel();
  if (arrival_timer_) arrival_timer_->cancel();
  if (wake_timer_) Wake();
}

awaitable<void> LoadRunner::Impl::WaitForWake() {
  error_code ec;
  wake_timer_->expires_at(asio::steady_timer::time_point::max());
  co_await wake_timer_->async_wait(asio::redirect_error(use_awaitable, ec));
}

awaitable<error_code> LoadRunner::Impl::Connect(Connection& conn) {
  error_code ec;
  conn.stream.expires_after(
      std::chrono::nanoseconds(absl::ToInt64Nanoseconds(options_.connect_timeout)));
  co_await conn.stream.async_connect(endpoints_, asio::redirect_error(use_awaitable, ec));
  if (!ec) {
    conn.stream.socket().set_option(tcp::no_delay(true), ec);
    EnableReceiveStamps(conn.stream.socket().native_handle());  // Without it: read times.
    ++summary_.connections_opened;
  }
  conn.stream.expires_never();
  co_return ec;
}

awaitable<absl::Status> LoadRunner::Impl::CheckEndpoint() {
  std::string where = absl::StrCat("http://", endpoint_.authority());
  Connection conn(ioc_);
  error_code ec = co_await Connect(conn);
  if (ec) {
    co_return absl::UnavailableError(
        absl::StrCat("cannot reach ", where, ": ", ec.message(), "; no request was sent"));
  }
  // With a model name there is nothing to ask: a connection proves the
  // server is there, and real P/D proxies serve no route but the
  // generation ones (vLLM's toy_proxy_server.py has no /v1/models).
  if (!options_.model.empty()) {
    model_ = options_.model;
    error_code ignored;
    conn.stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    co_return absl::OkStatus();
  }
  std::string target = absl::StrCat(endpoint_.base_path, "/v1/models");
  where = absl::StrCat(where, target);
  conn.stream.expires_after(
      std::chrono::nanoseconds(absl::ToInt64Nanoseconds(options_.connect_timeout)));
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, endpoint_.authority());
  co_await http::async_write(conn.stream, req, asio::redirect_error(use_awaitable, ec));
  http::response_parser<http::string_body> parser;
  parser.body_limit(1 << 20);
  if (!ec)
    co_await http::async_read(conn.stream, conn.buffer, parser,
                              asio::redirect_error(use_awaitable, ec));
  if (ec) {
    co_return absl::UnavailableError(
        absl::StrCat("endpoint check ", where, " failed: ", ec.message(), "; no request was sent"));
  }
  int status = parser.get().result_int();
  if (status < 200 || status >= 300) {
    co_return absl::UnavailableError(absl::StrCat(
        "endpoint check ", where, " answered HTTP ", status,
        " (give the model name explicitly: P/D proxies serve no /v1/models); no request was sent"));
  }
  model_ = FirstModelId(parser.get().body());
  if (model_.empty()) {
    co_return absl::FailedPreconditionError(
        absl::StrCat(where, " lists no model; give one explicitly; no request was sent"));
  }
  error_code ignored;
  conn.stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return absl::OkStatus();
}

awaitable<void> LoadRunner::Impl::Preconnect(int count) {
  auto self = this;
  for (int i = 0; i < count; ++i) {
    ++connecting_;
    asio::co_spawn(
        ioc_,
        [self]() -> awaitable<void> {
          auto conn = std::make_unique<Connection>(self->ioc_);
          error_code ec = co_await self->Connect(*conn);
          if (!ec) self->idle_.push_back(std::move(conn));
          --self->connecting_;
          self->Wake();
        },
        asio::detached);
  }
  while (connecting_ > 0 && !cancelled_) co_await WaitForWake();
}

v1::RequestRecord LoadRunner::Impl::NewRecord(int index) const {
  v1::RequestRecord r;
  r.set_experiment_id(options_.experiment_id);
  r.set_phase(options_.phase);
  r.set_attempt(options_.attempt);
  r.set_request_index(index);
  r.set_planned_send_ns(planned_->empty() ? 0 : (*planned_)[static_cast<size_t>(index)]);
  *r.mutable_load_start() = load_start_;
  const PromptShape shape = prompts_->Shape(static_cast<size_t>(index));
  r.set_requested_prompt_tokens(shape.input_tokens);
  r.set_requested_completion_tokens(shape.output_tokens);
  return r;
}

void LoadRunner::Impl::Finish(v1::RequestRecord record, bool completed) {
  (completed ? completed_ : failed_)++;
  {
    absl::MutexLock lock(&mu_);
    pending_.push_back(std::move(record));
  }
  --in_flight_;
  Wake();
}

awaitable<void> LoadRunner::Impl::Dispatch() {
  const int n = static_cast<int>(prompts_->size());
  for (int i = 0; i < n; ++i) {
    if (!cancelled_) {
      Clock::time_point due =
          t0_ +
          std::chrono::nanoseconds(planned_->empty() ? 0 : (*planned_)[static_cast<size_t>(i)]);
      // The arrival is the planned time, or when the timer actually fired:
      // timer lateness is schedule lag, not client queue time.
      Clock::time_point arrival = due;
      if (due > Clock::now()) {
        error_code ec;
        // The spin is at most a quarter of the wait: a short wait (a high
        // rate, where the thread is seldom idle) spins for little. A wait no
        // longer than kArrivalSpin is spun whole: a timer that short would
        // fire late anyway, by about as much as the wait.
        const Clock::duration wait = due - Clock::now();
        if (wait > kArrivalSpin) {
          const auto early = std::min<Clock::duration>(kArrivalSpin, wait / 4);
          arrival_timer_->expires_at(due - early);
          co_await arrival_timer_->async_wait(asio::redirect_error(use_awaitable, ec));
        }
        arrival = std::max(due, Clock::now());  // Fired early: Send waits out the rest.
      }
      while (in_flight_ >= options_.concurrency && !cancelled_) co_await WaitForWake();
      if (!cancelled_) {
        ++in_flight_;
        int64_t queued = std::max<int64_t>(
            0,
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - arrival).count());
        asio::co_spawn(ioc_, Send(i, queued, due), asio::detached);
        continue;
      }
    }
    v1::RequestRecord r = NewRecord(i);
    r.set_error("cancelled before send");
    ++summary_.not_sent;
    absl::MutexLock lock(&mu_);
    pending_.push_back(std::move(r));
  }
  while (in_flight_ > 0) co_await WaitForWake();
}

awaitable<void> LoadRunner::Impl::Send(int index, int64_t queued_ns, Clock::time_point not_before) {
  // Made and rendered before the send timestamp: building a long prompt's
  // body is client work, not server latency.
  std::string wire = RenderHttpRequest(
      endpoint_, options_.api, model_, prompts_->Get(static_cast<size_t>(index)), options_.load_tag,
      RequestId(options_.experiment_id, options_.phase, options_.attempt, index));
  v1::RequestRecord r = NewRecord(index);
  while (Clock::now() < not_before) {  // At most kArrivalSpin, less what rendering took.
  }
  r.set_queued_ns(queued_ns);
  r.set_sent_ns(SinceStart());
  ++sent_;
  ++summary_.sent;
  RequestDeadline deadline(
      ioc_,
      Clock::now() + std::chrono::nanoseconds(absl::ToInt64Nanoseconds(options_.request_timeout)));

  std::unique_ptr<Connection> conn;
  std::string error;
  StreamOutcome stream;
  bool keep = false;
  int status = 0;
  // A pooled connection the server has closed while idle fails at once;
  // such a request is retried once on a new connection.
  for (int attempt = 0; attempt < 2 && !cancelled_; ++attempt) {
    error.clear();
    const bool reused = attempt == 0 && !idle_.empty();
    if (reused) {
      conn = std::move(idle_.back());
      idle_.pop_back();
    } else {
      conn = std::make_unique<Connection>(ioc_);
      active_.insert(conn.get());  // So that a cancel also aborts the connect.
      error_code ec = co_await Connect(*conn);
      if (ec) {
        active_.erase(conn.get());
        error = cancelled_ ? "cancelled" : absl::StrCat("connect: ", ec.message());
        conn.reset();
        break;
      }
    }
    active_.insert(conn.get());
    deadline.Guard(&conn->stream.socket());
    http::response_parser<http::buffer_body> parser;
    // Not boost::none: Boost 1.74 compares Content-Length against the
    // optional and rejects every sized body when it is empty.
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    error_code ec = co_await WriteAndReadHeader(*conn, wire, parser);
    if (deadline.expired()) ec = beast::error::timeout;
    if (ec && reused && !cancelled_ && ec != beast::error::timeout) {
      deadline.Guard(nullptr);
      active_.erase(conn.get());
      conn.reset();
      continue;
    }
    status = ec ? 0 : parser.get().result_int();
    if (!ec) ec = co_await ReadBody(*conn, parser, status, r, stream);
    if (deadline.expired()) ec = beast::error::timeout;
    deadline.Guard(nullptr);
    active_.erase(conn.get());
    r.set_end_ns(SinceStart());
    error = AttemptError(ec, status, stream);
    keep = !ec && parser.is_done() && parser.keep_alive();
    break;
  }
  EndSend(std::move(r), status, std::move(error), stream.saw_done, std::move(conn), keep);
}

void LoadRunner::Impl::EndSend(v1::RequestRecord r, int status, std::string error, bool saw_done,
                               std::unique_ptr<Connection> conn, bool keep) {
  if (cancelled_ && error.empty() && !saw_done) error = "cancelled";
  if (r.end_ns() == 0) r.set_end_ns(SinceStart());
  r.set_http_status(status);
  if (r.completion_tokens() == 0 && r.prompt_tokens() == 0) {
    r.set_completion_tokens(r.chunk_ns_size());  // No usage chunk: the chunk count is all we know.
  }
  r.set_error(error);
  if (conn && keep && !cancelled_) {
    ++conn->served;
    idle_.push_back(std::move(conn));
  }
  bool ok = error.empty();
  (ok ? summary_.completed : summary_.failed)++;
  Finish(std::move(r), ok);
}

awaitable<error_code> LoadRunner::Impl::WriteAndReadHeader(
    Connection& conn, const std::string& wire, http::response_parser<http::buffer_body>& parser) {
  error_code ec;
  // On the socket, not the tcp_stream: the request's deadline is its
  // RequestDeadline, not a timer per operation.
  co_await asio::async_write(conn.stream.socket(), asio::buffer(wire),
                             asio::redirect_error(use_awaitable, ec));
  if (!ec) ec = co_await ReadHeaderStamped(conn, parser);
  co_return ec;
}

// A response body, parsed as its bytes come: what came with the header,
// then each read's bytes (AfterRead).
class LoadRunner::Impl::Body {
 public:
  Body(Impl& impl, Connection& conn, http::response_parser<http::buffer_body>& parser, int status,
       v1::RequestRecord& r, StreamOutcome& stream)
      : impl_(impl), conn_(conn), parser_(parser), status_(status), r_(r), stream_(stream) {}

  bool over() const { return over_; }
  const error_code& ec() const { return ec_; }
  Connection& conn() { return conn_; }

  // Parses what the connection's buffer holds, up to what the parser needs
  // more bytes for; over() once the message is complete or broken.
  void Parse();
  // After a read into the buffer: its error (eof ends a body that ends with
  // its connection), or the bytes to parse.
  void AfterRead(error_code ec);

 private:
  void OnBodyBytes(size_t got);
  void End(error_code ec) {
    over_ = true;
    ec_ = ec;
  }

  Impl& impl_;
  Connection& conn_;
  http::response_parser<http::buffer_body>& parser_;
  const int status_;
  v1::RequestRecord& r_;
  StreamOutcome& stream_;
  SseParser sse_;
  bool over_ = false;
  error_code ec_;
  char buf_[kReadChunk];
};

void LoadRunner::Impl::Body::Parse() {
  while (!over_) {
    if (parser_.is_done()) return End({});
    if (conn_.buffer.size() == 0) return;
    parser_.get().body().data = buf_;
    parser_.get().body().size = sizeof buf_;
    error_code ec;
    conn_.buffer.consume(parser_.put(conn_.buffer.data(), ec));
    const bool need_more = ec == http::error::need_more;
    if (need_more || ec == http::error::need_buffer) ec = {};
    OnBodyBytes(sizeof buf_ - parser_.get().body().size);
    if (ec) return End(ec);
    if (need_more) return;  // A partial chunk header waits in the buffer.
  }
}

void LoadRunner::Impl::Body::AfterRead(error_code ec) {
  if (ec == asio::error::eof) {
    if (!parser_.got_some()) return End(http::error::end_of_stream);
    ec = {};
    parser_.put_eof(ec);  // A body that ends with the connection.
    return End(ec);
  }
  if (ec) return End(ec);
  Parse();
}

void LoadRunner::Impl::Body::OnBodyBytes(size_t got) {
  if (got == 0) return;
  if (status_ != 200) {
    std::string& error_body = stream_.error_body;
    if (error_body.size() < kMaxErrorBody * 4) {
      error_body.append(buf_, std::min(got, kMaxErrorBody * 4 - error_body.size()));
    }
    return;
  }
  // Not before the request went out, whatever the wall clock did meanwhile
  // (the kernel stamps on it).
  const int64_t received = std::max(r_.sent_ns(), impl_.NanosecondsSinceStart(conn_.received));
  sse_.Feed(absl::string_view(buf_, got), [&](absl::string_view data) {
    StreamChunk c = ParseStreamChunk(data, impl_.options_.api);
    if (c.done) stream_.saw_done = true;
    if (!c.error.empty() && stream_.stream_error.empty()) stream_.stream_error = c.error;
    const bool new_tokens =
        c.has_tokens || (c.counts_are_cumulative && c.completion_tokens > r_.completion_tokens());
    if (new_tokens) {
      if (r_.first_token_ns() == 0) {
        r_.set_first_token_ns(received);
        impl_.first_token_read_lags_.push_back(std::max<int64_t>(0, impl_.SinceStart() - received));
      }
      r_.add_chunk_ns(received);
    }
    if (c.has_usage) {
      r_.set_prompt_tokens(c.prompt_tokens);
      r_.set_completion_tokens(c.completion_tokens);
      r_.set_cached_tokens(c.cached_tokens);
    }
  });
}

// The rest of a body after its first token, one Asio read per chunk as
// before; but each read's completion parses its bytes and starts the next
// read itself, and only the body's end resumes the coroutine: a coroutine
// resumption and a new awaitable per chunk cost more CPU than the parsing
// (issue 9, P3; docs/design.md §10). Each chunk's time is when its read
// returned.
template <typename Handler>
class LoadRunner::Impl::ReadRest {
 public:
  ReadRest(Body& body, Handler handler) : body_(&body), handler_(std::move(handler)) {}

  void Start() {
    Connection& conn = body_->conn();
    conn.stream.socket().async_read_some(conn.buffer.prepare(kReadChunk), std::move(*this));
  }
  void operator()(error_code ec, size_t n) {
    Connection& conn = body_->conn();
    conn.buffer.commit(n);
    conn.received = Clock::now();
    body_->AfterRead(ec);
    if (body_->over()) return std::move(handler_)();
    Start();  // Moves this object into the next read; nothing after.
  }

 private:
  Body* body_;
  Handler handler_;
};

awaitable<error_code> LoadRunner::Impl::ReadBody(Connection& conn,
                                                 http::response_parser<http::buffer_body>& parser,
                                                 int status, v1::RequestRecord& r,
                                                 StreamOutcome& stream) {
  Body body(*this, conn, parser, status, r, stream);
  body.Parse();  // Body bytes that came with the header keep that read's stamp.
  // Stamped until the first token is in, so that its time is its arrival
  // (common/receive_stamp.h).
  while (!body.over() && r.first_token_ns() == 0) body.AfterRead(co_await ReadSomeStamped(conn));
  if (!body.over()) {
    co_await asio::async_initiate<const asio::use_awaitable_t<>&, void()>(
        [&body](auto handler) { ReadRest<decltype(handler)>(body, std::move(handler)).Start(); },
        use_awaitable);
  }
  co_return body.ec();
}

std::string LoadRunner::Impl::AttemptError(const error_code& ec, int status,
                                           const StreamOutcome& stream) const {
  if (ec == beast::error::timeout) {
    return absl::StrCat("timeout after ", absl::FormatDuration(options_.request_timeout));
  }
  if (cancelled_ && ec) return "cancelled";
  if (ec) return absl::StrCat(status == 0 ? "request: " : "stream: ", ec.message());
  if (status != 200) return ErrorText(status, stream.error_body);
  if (!stream.stream_error.empty()) return absl::StrCat("stream error: ", stream.stream_error);
  if (!stream.saw_done) return "stream ended without [DONE]";
  return "";
}

awaitable<void> LoadRunner::Impl::Main(absl::Status* check_status) {
  *check_status = co_await CheckEndpoint();
  if (!check_status->ok()) co_return;
  summary_.model = model_;
  int n = static_cast<int>(prompts_->size());
  int preconnect = options_.preconnect < 0 ? std::min(options_.concurrency, n)
                                           : std::min(options_.preconnect, options_.concurrency);
  co_await Preconnect(preconnect);
  t0_ = Clock::now();
  // protobuf's TimeUtil::GetCurrentTime() has whole-second precision here.
  load_start_ =
      google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(absl::Now()));
  co_await Dispatch();
  summary_.wall = absl::Nanoseconds(SinceStart());
  SummarizeReadLags();
}

void LoadRunner::Impl::SummarizeReadLags() {
  // The same percentiles as the analysis computes for TTFT (interpolated).
  const std::vector<double> lags = analysis::SortedCopy(std::move(first_token_read_lags_));
  const auto at = [&](double percent) {
    return absl::Nanoseconds(static_cast<int64_t>(analysis::Percentile(lags, percent)));
  };
  summary_.first_token_read_lag_p50 = at(50);
  summary_.first_token_read_lag_p99 = at(99);
  summary_.first_token_read_lag_max = at(100);
}

void LoadRunner::Impl::WriterLoop(RecordSink& sink) {
  // The writer gives the core up the moment the io thread wakes: a send's
  // timer must not wait behind an SQLite commit (issue 9, P4; docs/design.md
  // §10). SCHED_IDLE still runs whenever the io thread sleeps, which below
  // saturation is most of the time; at the latest the records drain when the
  // load ends. Failing to set it only costs lag, so it is not an error.
  sched_param idle{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
  while (true) {
    std::vector<v1::RequestRecord> batch;
    bool stop;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&writer_stop_), options_.flush_interval);
      batch.swap(pending_);
      stop = writer_stop_;
    }
    if (!batch.empty()) {
      absl::Status s = sink.Write(batch);
      if (!s.ok()) {
        {
          absl::MutexLock lock(&mu_);
          if (sink_status_.ok()) sink_status_ = s;
        }
        Cancel();
      }
    }
    if (stop) {
      absl::MutexLock lock(&mu_);
      if (pending_.empty()) return;
    }
  }
}

absl::StatusOr<LoadSummary> LoadRunner::Impl::Run(const PromptSet& prompts,
                                                  const std::vector<int64_t>& planned,
                                                  RecordSink& sink) {
  if (!planned.empty() && planned.size() != prompts.size()) {
    return absl::InvalidArgumentError(absl::StrCat("planned_send_ns has ", planned.size(),
                                                   " entries for ", prompts.size(), " prompts"));
  }
  // This thread's; the writer thread sets its own (idle) scheduling.
  absl::StatusOr<ThreadScheduling> scheduling = EnterRealtime(options_.realtime_priority);
  if (!scheduling.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "realtime_priority: ", scheduling.status().message(), "; no request was sent"));
  }
  struct Restore {
    const ThreadScheduling& previous;
    ~Restore() { RestoreScheduling(previous); }
  } restore{*scheduling};
  error_code ec;
  tcp::resolver resolver(ioc_);
  endpoints_ = resolver.resolve(endpoint_.host, endpoint_.port, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", endpoint_.host, ": ",
                                               ec.message(), "; no request was sent"));
  }
  ioc_.restart();
  prompts_ = &prompts;
  planned_ = &planned;
  summary_ = LoadSummary{};
  first_token_read_lags_.clear();
  first_token_read_lags_.reserve(prompts.size());
  summary_.planned = static_cast<int64_t>(prompts.size());
  sent_ = completed_ = failed_ = 0;
  cancelled_ = false;
  in_flight_ = 0;
  idle_.clear();
  wake_timer_ = std::make_unique<asio::steady_timer>(ioc_);
  arrival_timer_ = std::make_unique<asio::steady_timer>(ioc_);
  {
    absl::MutexLock lock(&mu_);
    writer_stop_ = false;
    sink_status_ = absl::OkStatus();
    pending_.clear();
  }
  std::thread writer([this, &sink] { WriterLoop(sink); });
  absl::Status check_status;
  if (cancel_requested_) asio::post(ioc_, [this] { DoCancel(); });
  asio::co_spawn(ioc_, Main(&check_status), [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
  });
  ioc_.run();
  idle_.clear();
  wake_timer_.reset();
  arrival_timer_.reset();
  {
    absl::MutexLock lock(&mu_);
    writer_stop_ = true;
  }
  writer.join();
  cancel_requested_ = false;
  if (!check_status.ok()) return check_status;
  absl::MutexLock lock(&mu_);
  if (!sink_status_.ok()) return sink_status_;
  return summary_;
}

LoadRunner::LoadRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LoadRunner::~LoadRunner() = default;

absl::StatusOr<std::unique_ptr<LoadRunner>> LoadRunner::Create(LoadOptions options) {
  if (options.concurrency <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("concurrency must be > 0, got ", options.concurrency));
  }
  if (options.request_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("request_timeout must be > 0");
  }
  if (absl::Status s = ValidateRealtimePriority(options.realtime_priority); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("realtime_priority ", s.message()));
  }
  absl::StatusOr<Endpoint> endpoint = ParseEndpoint(options.url);
  if (!endpoint.ok()) return endpoint.status();
  RaiseOpenFileLimit();
  return std::unique_ptr<LoadRunner>(
      new LoadRunner(std::make_unique<Impl>(std::move(options), *std::move(endpoint))));
}

absl::StatusOr<LoadSummary> LoadRunner::Run(const PromptSet& prompts,
                                            const std::vector<int64_t>& planned_send_ns,
                                            RecordSink& sink) {
  return impl_->Run(prompts, planned_send_ns, sink);
}

void LoadRunner::Cancel() { impl_->Cancel(); }
LoadProgress LoadRunner::progress() const { return impl_->progress(); }

}  // namespace servelab::loadgen
