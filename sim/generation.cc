#include "sim/generation.h"

#include <algorithm>
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
  // SGLang's /generate: cumulative text, output_ids and meta_info per chunk.
  bool native = false;
  std::string head;      // `data: {"id":...,"choices":[{"index":0,` for content chunks
  std::string envelope;  // `{"id":...,"model":...` without choices, for usage
};

ChunkFormat MakeFormat(const RequestState& r, const std::string& model) {
  ChunkFormat f;
  f.chat = r.request.kind == ApiKind::kChat;
  f.native = r.request.stream_native;
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

// What this instance reports as the request's cached prompt tokens.
int64_t ReportedCachedTokens(const RequestState& r, const CompatOptions& compat) {
  int64_t prompt = static_cast<int64_t>(r.request.prompt_tokens.size());
  return r.request.kv_transferred
             ? DecodeCachedTokens(compat, prompt, r.request.remote_cached_tokens,
                                  r.request.always_report_cached_tokens, r.cached_tokens)
             : r.cached_tokens;
}

// A token id for output_ids: any stable value will do, the text is what the
// sim models.
int64_t NativeTokenId(uint64_t seed, int64_t index) {
  return static_cast<int64_t>((seed + static_cast<uint64_t>(index) * 7919) % 30000) + 100;
}

// One /generate answer or stream chunk after `generated` tokens
// (python/sglang/srt/managers/tokenizer_manager.py _handle_batch_output:
// cumulative text and output_ids unless --incremental-streaming-output;
// meta_info always carries the token counts, cached_tokens included).
std::string NativeJson(const RequestState& r, const CompatOptions& compat, const std::string& text,
                       const std::string& output_ids, int64_t generated, bool finished) {
  const std::string id = r.request.rid.empty() ? absl::StrCat("sim", r.id) : r.request.rid;
  return absl::StrCat(
      "{\"text\":", JsonQuote(text), ",\"output_ids\":[", output_ids,
      "],\"meta_info\":{\"id\":", JsonQuote(id), ",\"finish_reason\":",
      !finished ? std::string("null")
      : std::string(r.finish_reason) == "stop"
          ? std::string("{\"type\":\"stop\"}")
          : absl::StrCat("{\"type\":\"length\",\"length\":", generated, "}"),
      ",\"prompt_tokens\":", r.request.prompt_tokens.size(), ",\"completion_tokens\":", generated,
      ",\"cached_tokens\":", std::max<int64_t>(ReportedCachedTokens(r, compat), 0), "}}");
}

std::string UsageJson(const RequestState& r, const CompatOptions& compat, bool streaming) {
  int64_t prompt = static_cast<int64_t>(r.request.prompt_tokens.size());
  int64_t cached = ReportedCachedTokens(r, compat);
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

std::string FullResponse(const RequestState& r, const InstanceModel& instance,
                         const std::string& text, int port) {
  const std::string& model = instance.config().model;
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
                      "],\"usage\":", UsageJson(r, instance.compat(), false),
                      IsVllmFamily(instance.compat().compat) && instance.role() == Role::kPrefill &&
                              r.request.remote_decode
                          ? KvTransferParamsJson(r, port)
                          : std::string(),
                      "}");
}

// Waits until a slot is free. The wake callback may run on any thread, so it
// only posts back to this connection's executor.
asio::awaitable<void> WaitForAdmission(InstanceModel& instance, RequestState& r) {
  auto executor = co_await asio::this_coro::executor;
  auto timer = std::make_shared<asio::steady_timer>(executor);
  auto admitted = std::make_shared<std::atomic<bool>>(false);
  if (instance.TryAdmit(r, [executor, timer, admitted] {
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

// Starts the SSE response; chat streams open with the assistant role. False
// (the request already finished as aborted) when the client has gone.
asio::awaitable<bool> StartStream(ClientConn& conn, InstanceModel& instance, RequestState& r,
                                  const ChunkFormat& format, std::string& pending,
                                  bool keep_alive) {
  // Awaited into a variable, not inside the `if`: g++ 12 miscompiles a
  // co_await in a condition of a coroutine that has no local variable (the
  // frame is resumed in a bad state: SIGILL).
  const bool started = co_await conn.StartChunked(200, "text/event-stream", keep_alive);
  if (!started) {
    instance.Finish(r, Outcome::kAborted, 200);
    co_return false;
  }
  if (format.chat) {
    absl::StrAppend(&pending, format.head,
                    "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
                    "\"finish_reason\":null}]}\n\n");
  }
  co_return true;
}

// Generates the output tokens at the modelled pace: streamed as SSE chunks
// into `pending` (written whenever the next token is not yet due), or
// gathered in `full_text`. Stops early at an injected drop. False (the
// request already finished as aborted) when the client has gone.
asio::awaitable<bool> GenerateTokens(ClientConn& conn, InstanceModel& instance, RequestState& r,
                                     asio::steady_timer& timer, const ChunkFormat& format,
                                     std::string& pending, std::string& full_text,
                                     std::string& output_ids) {
  const bool stream = r.request.stream;
  const bool drop = r.fault == FaultAction::kDrop;
  const int64_t n = r.output_tokens;
  SteadyClock::time_point due = SteadyClock::now();
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) {
      due = instance.NextTokenDue(due);
      if (due > SteadyClock::now() || pending.size() > kMaxPendingBytes) {
        if (!co_await conn.WriteChunk(pending)) {
          instance.Finish(r, Outcome::kAborted, 200);
          co_return false;
        }
        pending.clear();
        co_await SleepUntil(timer, due);
      }
    }
    if (drop && i >= r.drop_after_tokens) break;
    std::string text = GeneratedTokenText(r.text_seed, i);
    const char* finish = i == n - 1 ? r.finish_reason : nullptr;
    if (format.native) {
      full_text += text;
      absl::StrAppend(&output_ids, i == 0 ? "" : ",", NativeTokenId(r.text_seed, i));
    }
    if (stream) {
      if (format.native) {
        absl::StrAppend(&pending, "data: ",
                        NativeJson(r, instance.compat(), full_text, output_ids, i + 1, finish),
                        "\n\n");
      } else {
        AppendTokenChunk(format, text, finish, pending);
      }
      if (i == 0) {
        // The first token always goes out alone: server-side TTFT is the
        // moment it was written.
        if (!co_await conn.WriteChunk(pending)) {
          instance.Finish(r, Outcome::kAborted, 200);
          co_return false;
        }
        pending.clear();
      }
    } else if (!format.native) {
      full_text += text;
    }
    instance.OnToken(r);
  }
  co_return true;
}

// Writes the end of a completed response: the usage chunk and [DONE] of a
// stream, or the whole JSON answer. False when the client has gone.
asio::awaitable<bool> EndResponse(ClientConn& conn, InstanceModel& instance, const RequestState& r,
                                  const ChunkFormat& format, std::string& pending,
                                  const std::string& full_text, const std::string& output_ids,
                                  bool keep_alive) {
  if (!r.request.stream) {
    const std::string body =
        format.native ? NativeJson(r, instance.compat(), full_text, output_ids, r.generated, true)
                      : FullResponse(r, instance, full_text, LocalPort(conn));
    co_return co_await conn.WriteJson(200, body, keep_alive);
  }
  if (r.request.include_usage && !format.native) {
    absl::StrAppend(&pending, "data: ", format.envelope,
                    ",\"choices\":[],\"usage\":", UsageJson(r, instance.compat(), true), "}\n\n");
  }
  pending += "data: [DONE]\n\n";
  co_return co_await conn.EndChunked(pending);
}

}  // namespace

asio::awaitable<bool> AnswerInjectedError(ClientConn& conn, InstanceModel& instance,
                                          RequestState& r, bool keep_alive) {
  bool ok = co_await conn.WriteJson(r.error_status,
                                    ErrorBody(r.error_status, "injected fault: error"), keep_alive);
  instance.Finish(r, Outcome::kError, r.error_status);
  co_return ok;
}

asio::awaitable<void> HangUntilClientLeaves(ClientConn& conn, InstanceModel& instance,
                                            RequestState& r) {
  char byte;
  boost::system::error_code ec;
  co_await conn.socket().async_read_some(asio::buffer(&byte, 1),
                                         asio::redirect_error(asio::use_awaitable, ec));
  instance.Finish(r, Outcome::kAborted, 0);
}

asio::awaitable<bool> ServeGeneration(ClientConn& conn, InstanceModel& instance,
                                      GenerationRequest& request, RequestMeta& meta,
                                      bool keep_alive) {
  std::unique_ptr<RequestState> r = instance.Arrive(std::move(request), std::move(meta));
  const std::string& model = instance.config().model;
  if (r->fault == FaultAction::kError)
    co_return co_await AnswerInjectedError(conn, instance, *r, keep_alive);
  co_await WaitForAdmission(instance, *r);
  asio::steady_timer timer(co_await asio::this_coro::executor);
  if (r->fault == FaultAction::kHang) {
    co_await HangUntilClientLeaves(conn, instance, *r);  // Holds its admission slot.
    co_return false;
  }
  co_await SleepUntil(timer, SteadyClock::now() + instance.StartPrefill(*r));
  instance.EndPrefill(*r);

  const bool stream = r->request.stream;
  ChunkFormat format = MakeFormat(*r, model);
  std::string pending;
  std::string full_text;
  std::string output_ids;
  if (stream && !co_await StartStream(conn, instance, *r, format, pending, keep_alive)) {
    co_return false;
  }
  if (!co_await GenerateTokens(conn, instance, *r, timer, format, pending, full_text, output_ids)) {
    co_return false;
  }
  if (r->fault == FaultAction::kDrop) {
    if (stream) co_await conn.WriteChunk(pending);
    conn.Abort();
    instance.Finish(*r, Outcome::kDropped, 200);
    co_return false;
  }
  bool ok =
      co_await EndResponse(conn, instance, *r, format, pending, full_text, output_ids, keep_alive);
  std::chrono::nanoseconds lease =
      instance.Finish(*r, ok ? Outcome::kSuccess : Outcome::kAborted, 200);
  if (lease.count() > 0) {
    // The lease ends on its own: nothing else may happen on this instance
    // to notice it, and waiters it blocks must be woken.
    auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor, lease);
    timer->async_wait([timer, &instance](boost::system::error_code) { instance.ExpireLeases(); });
  }
  co_return ok;
}

}  // namespace servelab::sim
