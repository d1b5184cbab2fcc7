#include "sim/generation.h"

#include <atomic>
#include <ctime>
#include <memory>

#include "absl/strings/str_cat.h"
#include "sim/tokens.h"

namespace servelab::sim {
namespace {

// Flush the pending SSE text once it gets this large even if tokens are overdue.
constexpr size_t kMaxPendingBytes = 64 * 1024;

// Precomputed JSON pieces for one request's chunks.
struct ChunkFormat {
  bool chat = false;
  std::string head;      // `data: {"id":...,"choices":[{"index":0,` for content chunks
  std::string envelope;  // `{"id":...,"model":...` without choices, for usage
};

ChunkFormat MakeFormat(const RequestState& r, const std::string& model) {
  ChunkFormat f;
  f.chat = r.request.kind == ApiKind::kChat;
  std::string id = absl::StrCat(f.chat ? "chatcmpl-" : "cmpl-", "sim", r.id);
  f.envelope = absl::StrCat(
      "{\"id\":\"", id, "\",\"object\":\"", f.chat ? "chat.completion.chunk" : "text_completion",
      "\",\"created\":", static_cast<int64_t>(std::time(nullptr)), ",\"model\":", JsonQuote(model));
  f.head = absl::StrCat("data: ", f.envelope, ",\"choices\":[{\"index\":0,");
  return f;
}

void AppendTokenChunk(const ChunkFormat& f, absl::string_view text, const char* finish,
                      std::string& out) {
  out += f.head;
  if (f.chat) {
    absl::StrAppend(&out, "\"delta\":{\"content\":", JsonQuote(text), "}");
  } else {
    absl::StrAppend(&out, "\"text\":", JsonQuote(text));
  }
  absl::StrAppend(&out, ",\"logprobs\":null,\"finish_reason\":",
                  finish == nullptr ? "null" : absl::StrCat("\"", finish, "\""), "}]}\n\n");
}

std::string UsageJson(const RequestState& r, const CompatOptions& compat, bool streaming) {
  int64_t prompt = static_cast<int64_t>(r.request.prompt_tokens.size());
  int64_t cached = r.request.kv_transferred && r.request.remote_cached_tokens >= 0
                       ? r.request.remote_cached_tokens
                       : r.cached_tokens;
  std::string details;
  if (r.request.always_report_cached_tokens || ReportsCachedTokens(compat, cached)) {
    details = absl::StrCat(",\"prompt_tokens_details\":{\"cached_tokens\":", cached, "}");
  } else if (!streaming && NullPromptTokensDetails(compat)) {
    details = ",\"prompt_tokens_details\":null";
  }
  return absl::StrCat("{\"prompt_tokens\":", prompt, ",\"total_tokens\":", prompt + r.generated,
                      ",\"completion_tokens\":", r.generated, details, "}");
}

// What a vLLM prefill instance returns for a remote-decode request
// (vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py
// request_finished): the handle the proxy passes to the decode side.
// remote_cached_tokens is the sim's own addition (the decode side reports it
// as the client's cached_tokens).
std::string KvTransferParamsJson(const RequestState& r, int port) {
  std::string blocks;
  for (int64_t i = 0; i < r.reserved_blocks; ++i) absl::StrAppend(&blocks, i ? "," : "", i);
  return absl::StrCat(
      ",\"kv_transfer_params\":{\"do_remote_prefill\":true,\"do_remote_decode\":false,"
      "\"remote_block_ids\":[",
      blocks, "],\"remote_engine_id\":\"servelab-sim-", port,
      "\",\"remote_host\":\"127.0.0.1\",\"remote_port\":", port,
      ",\"tp_size\":1,\"remote_cached_tokens\":", r.cached_tokens, "}");
}

std::string FullResponse(const RequestState& r, const Engine& engine, const std::string& text,
                         int port) {
  const std::string& model = engine.config().model;
  bool chat = r.request.kind == ApiKind::kChat;
  std::string choice =
      chat ? absl::StrCat(
                 "{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":", JsonQuote(text),
                 "},\"logprobs\":null,\"finish_reason\":\"", r.finish_reason, "\"}")
           : absl::StrCat("{\"index\":0,\"text\":", JsonQuote(text),
                          ",\"logprobs\":null,\"finish_reason\":\"", r.finish_reason, "\"}");
  return absl::StrCat("{\"id\":\"", chat ? "chatcmpl-" : "cmpl-", "sim", r.id, "\",\"object\":\"",
                      chat ? "chat.completion" : "text_completion",
                      "\",\"created\":", static_cast<int64_t>(std::time(nullptr)),
                      ",\"model\":", JsonQuote(model), ",\"choices\":[", choice,
                      "],\"usage\":", UsageJson(r, engine.compat(), false),
                      IsVllmFamily(engine.compat().compat) && engine.role() == Role::kPrefill &&
                              r.request.remote_decode
                          ? KvTransferParamsJson(r, port)
                          : std::string(),
                      "}");
}

// Waits until a slot is free. The wake callback may run on any thread, so it
// only posts back to this connection's executor.
asio::awaitable<void> WaitForAdmission(Engine& engine, RequestState& r) {
  auto executor = co_await asio::this_coro::executor;
  auto timer = std::make_shared<asio::steady_timer>(executor);
  auto admitted = std::make_shared<std::atomic<bool>>(false);
  if (engine.TryAdmit(r, [executor, timer, admitted] {
        asio::post(executor, [timer, admitted] {
          admitted->store(true);
          timer->cancel();
        });
      })) {
    co_return;
  }
  while (!admitted->load()) {
    timer->expires_at(SteadyClock::time_point::max());
    boost::system::error_code ec;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

int LocalPort(ClientConn& conn) {
  boost::system::error_code ec;
  tcp::endpoint local = conn.socket().local_endpoint(ec);
  return ec ? 0 : local.port();
}

asio::awaitable<void> SleepUntil(asio::steady_timer& timer, SteadyClock::time_point when) {
  if (when <= SteadyClock::now()) co_return;
  timer.expires_at(when);
  boost::system::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

}  // namespace

asio::awaitable<bool> AnswerInjectedError(ClientConn& conn, Engine& engine, RequestState& r,
                                          bool keep_alive) {
  bool ok = co_await conn.WriteJson(r.error_status,
                                    ErrorBody(r.error_status, "injected fault: error"), keep_alive);
  engine.Finish(r, Outcome::kError, r.error_status);
  co_return ok;
}

asio::awaitable<void> HangUntilClientLeaves(ClientConn& conn, Engine& engine, RequestState& r) {
  char byte;
  boost::system::error_code ec;
  co_await conn.socket().async_read_some(asio::buffer(&byte, 1),
                                         asio::redirect_error(asio::use_awaitable, ec));
  engine.Finish(r, Outcome::kAborted, 0);
}

asio::awaitable<bool> ServeGeneration(ClientConn& conn, Engine& engine, GenerationRequest& request,
                                      RequestMeta& meta, bool keep_alive) {
  std::unique_ptr<RequestState> r = engine.Arrive(std::move(request), std::move(meta));
  const std::string& model = engine.config().model;
  if (r->fault == FaultAction::kError)
    co_return co_await AnswerInjectedError(conn, engine, *r, keep_alive);
  co_await WaitForAdmission(engine, *r);
  asio::steady_timer timer(co_await asio::this_coro::executor);
  if (r->fault == FaultAction::kHang) {
    co_await HangUntilClientLeaves(conn, engine, *r);  // Holds its admission slot.
    co_return false;
  }
  co_await SleepUntil(timer, SteadyClock::now() + engine.StartPrefill(*r));
  engine.EndPrefill(*r);

  const RequestState& state = *r;
  const GenerationRequest& q = state.request;
  const bool drop = state.fault == FaultAction::kDrop;
  const int64_t n = state.output_tokens;
  ChunkFormat format = MakeFormat(state, model);
  std::string pending;
  std::string full_text;
  if (q.stream) {
    if (!co_await conn.StartChunked(200, "text/event-stream", keep_alive)) {
      engine.Finish(*r, Outcome::kAborted, 200);
      co_return false;
    }
    if (format.chat) {
      absl::StrAppend(&pending, format.head,
                      "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
                      "\"finish_reason\":null}]}\n\n");
    }
  }
  SteadyClock::time_point due = SteadyClock::now();
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) {
      due += engine.DecodeStep(*r);
      if (due > SteadyClock::now() || pending.size() > kMaxPendingBytes) {
        if (!co_await conn.WriteChunk(pending)) {
          engine.Finish(*r, Outcome::kAborted, 200);
          co_return false;
        }
        pending.clear();
        co_await SleepUntil(timer, due);
      }
    }
    if (drop && i >= state.drop_after_tokens) break;
    std::string text = GeneratedTokenText(state.text_seed, i);
    const char* finish = i == n - 1 ? state.finish_reason : nullptr;
    if (q.stream) {
      AppendTokenChunk(format, text, finish, pending);
      if (i == 0) {
        // The first token always goes out alone: server-side TTFT is the
        // moment it was written.
        if (!co_await conn.WriteChunk(pending)) {
          engine.Finish(*r, Outcome::kAborted, 200);
          co_return false;
        }
        pending.clear();
      }
    } else {
      full_text += text;
    }
    engine.OnToken(*r);
  }
  if (drop) {
    if (q.stream) co_await conn.WriteChunk(pending);
    conn.Abort();
    engine.Finish(*r, Outcome::kDropped, 200);
    co_return false;
  }
  bool ok;
  if (q.stream) {
    if (q.include_usage) {
      absl::StrAppend(&pending, "data: ", format.envelope,
                      ",\"choices\":[],\"usage\":", UsageJson(state, engine.compat(), true),
                      "}\n\n");
    }
    pending += "data: [DONE]\n\n";
    ok = co_await conn.EndChunked(pending);
  } else {
    ok = co_await conn.WriteJson(200, FullResponse(state, engine, full_text, LocalPort(conn)),
                                 keep_alive);
  }
  std::chrono::nanoseconds lease =
      engine.Finish(*r, ok ? Outcome::kSuccess : Outcome::kAborted, 200);
  if (lease.count() > 0) {
    // The lease ends on its own: nothing else may happen on this instance
    // to notice it, and waiters it blocks must be woken.
    auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor, lease);
    timer->async_wait([timer, &engine](boost::system::error_code) { engine.ExpireLeases(); });
  }
  co_return ok;
}

}  // namespace servelab::sim
