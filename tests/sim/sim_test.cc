// servelab-sim against the real binary over HTTP: stream format, usage,
// prefix cache, health during load, P/D routing, faults, bad input, the
// overlap witness and the debug request log.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "sim/json.h"
#include "tests/sim/sim_harness.h"
#include "tests/testing/subprocess.h"

namespace servelab::sim {
namespace {

using ::servelab::sim::testing::Get;
using ::servelab::sim::testing::Http;
using ::servelab::sim::testing::HttpResponse;
using ::servelab::sim::testing::Metric;
using ::servelab::sim::testing::Post;
using ::servelab::sim::testing::RawHttp;
using ::servelab::sim::testing::SimProcess;
using ::servelab::sim::testing::SseData;
using ::servelab::testing::StopProcess;
using ::servelab::testing::WaitFor;
using ::testing::HasSubstr;

// Modelled time 100x faster: default load time 2 s -> 20 ms, decode 15 ms -> 0.15 ms.
const std::vector<std::string> kFast = {"--time-scale", "0.01"};

std::vector<std::string> Flags(std::vector<std::string> extra) {
  std::vector<std::string> f = kFast;
  f.insert(f.end(), extra.begin(), extra.end());
  return f;
}

JsonValue MustParse(const std::string& s) {
  absl::StatusOr<JsonValue> v = ParseJson(s);
  EXPECT_TRUE(v.ok()) << v.status() << " in " << s;
  return v.ok() ? *v : JsonValue();
}

std::string StreamBody(const std::string& prompt_json, int tokens) {
  return absl::StrCat(
      R"({"prompt":)", prompt_json, R"(,"max_tokens":)", tokens, R"(,"min_tokens":)", tokens,
      R"(,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}})");
}

std::string Words(int n, const std::string& stem = "w") {
  std::string s;
  for (int i = 0; i < n; ++i) absl::StrAppend(&s, i ? " " : "", stem, i);
  return s;
}

// A whole POST /v1/completions of `body` that asks the sim to close after.
std::string ClosingPost(const std::string& body) {
  return absl::StrCat(
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "x-request-id: split-1\r\nConnection: close\r\nContent-Length: ",
      body.size(), "\r\n\r\n", body);
}

const JsonValue& Usage(const std::vector<std::string>& data, JsonValue& holder) {
  holder = MustParse(data[data.size() - 2]);
  static const JsonValue kNull;
  const JsonValue* u = holder.Find("usage");
  return u ? *u : kNull;
}

TEST(SimHttpTest, CompletionStreamFormatUsageAndDone) {
  SimProcess sim(kFast);
  ASSERT_TRUE(sim.WaitHealthy());
  HttpResponse r = Post(sim.port(), "/v1/completions", StreamBody("[1,2,3,4,5]", 7));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.complete);
  EXPECT_THAT(r.headers["content-type"], HasSubstr("text/event-stream"));
  std::vector<std::string> data = SseData(r.body);
  ASSERT_EQ(data.size(), 7u + 2u);  // 7 tokens, usage, [DONE]
  EXPECT_EQ(data.back(), "[DONE]");
  for (int i = 0; i < 7; ++i) {
    JsonValue chunk = MustParse(data[i]);
    EXPECT_EQ(chunk.Find("object")->string_value(), "text_completion");
    const JsonValue& choice = chunk.Find("choices")->items()[0];
    EXPECT_FALSE(choice.Find("text")->string_value().empty());
    if (i < 6)
      EXPECT_TRUE(choice.Find("finish_reason")->is_null());
    else
      EXPECT_EQ(choice.Find("finish_reason")->string_value(), "length");
  }
  JsonValue holder;
  const JsonValue& usage = Usage(data, holder);
  EXPECT_TRUE(holder.Find("choices")->items().empty());
  EXPECT_EQ(usage.Find("prompt_tokens")->int_value(), 5);
  EXPECT_EQ(usage.Find("completion_tokens")->int_value(), 7);
  EXPECT_EQ(usage.Find("total_tokens")->int_value(), 12);
  EXPECT_EQ(usage.Find("prompt_tokens_details")->Find("cached_tokens")->int_value(), 0);
  EXPECT_EQ(Metric(sim.port(), "vllm:generation_tokens_total"), 7);
  EXPECT_EQ(Metric(sim.port(), "vllm:prompt_tokens_total"), 5);
  EXPECT_EQ(Metric(sim.port(), "vllm:request_success_total"), 1);
  EXPECT_EQ(Metric(sim.port(), "vllm:time_to_first_token_seconds_count"), 1);
  EXPECT_EQ(Metric(sim.port(), "vllm:e2e_request_latency_seconds_count"), 1);
}

// The sim writes without suspending while the socket takes everything, and
// waits for the socket only for what it could not take: a client that reads
// late through a small window still gets every chunk, whole and in order.
TEST(SimHttpTest, AStreamToALateReaderArrivesWhole) {
  SimProcess sim({"--time-scale", "0"});  // every token at once: the writes pile up
  ASSERT_TRUE(sim.WaitHealthy());
  // About 7 MB: more than the kernel lets a send buffer grow to (tcp_wmem's
  // 4 MB), so some writes find it full.
  constexpr int kTokens = 40000;
  HttpResponse r =
      RawHttp(sim.port(), ClosingPost(StreamBody("[1,2,3,4,5]", kTokens)), absl::Seconds(20),
              /*half_close=*/false,
              {.receive_buffer_bytes = 4096, .wait_before_reading = absl::Milliseconds(300)});
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 200);
  EXPECT_TRUE(r.complete);
  std::vector<std::string> data = SseData(r.body);
  ASSERT_EQ(data.size(), kTokens + 2u);  // the tokens, usage, [DONE]
  for (int i = 0; i < kTokens; ++i) {
    JsonValue chunk = MustParse(data[i]);
    ASSERT_NE(chunk.Find("choices"), nullptr) << "chunk " << i << ": " << data[i];
  }
  JsonValue holder;
  EXPECT_EQ(Usage(data, holder).Find("completion_tokens")->int_value(), kTokens);
  EXPECT_EQ(data.back(), "[DONE]");
  EXPECT_EQ(Metric(sim.port(), "vllm:request_success_total"), 1);
}

TEST(SimHttpTest, TextPromptIsOneTokenPerWordAndNonStreaming) {
  SimProcess sim(kFast);
  ASSERT_TRUE(sim.WaitHealthy());
  HttpResponse r =
      Post(sim.port(), "/v1/completions", R"({"prompt":"the quick  brown\nfox","max_tokens":3})");
  ASSERT_EQ(r.status, 200) << r.body;
  JsonValue v = MustParse(r.body);
  EXPECT_EQ(v.Find("usage")->Find("prompt_tokens")->int_value(), 4);
  EXPECT_EQ(v.Find("usage")->Find("completion_tokens")->int_value(), 3);
  std::string text = v.Find("choices")->items()[0].Find("text")->string_value();
  EXPECT_EQ(std::count(text.begin(), text.end(), ' '), 3) << text;
}

TEST(SimHttpTest, ChatStreamAndNonStream) {
  SimProcess sim(kFast);
  ASSERT_TRUE(sim.WaitHealthy());
  HttpResponse r = Post(sim.port(), "/v1/chat/completions",
                        R"({"messages":[{"role":"user","content":"hello there"}],"max_tokens":4,
                            "stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<std::string> data = SseData(r.body);
  ASSERT_EQ(data.size(), 1u + 4u + 2u);  // role chunk, 4 tokens, usage, [DONE]
  JsonValue first = MustParse(data[0]);
  EXPECT_EQ(first.Find("object")->string_value(), "chat.completion.chunk");
  EXPECT_EQ(first.Find("choices")->items()[0].Find("delta")->Find("role")->string_value(),
            "assistant");
  JsonValue token = MustParse(data[1]);
  EXPECT_FALSE(
      token.Find("choices")->items()[0].Find("delta")->Find("content")->string_value().empty());
  JsonValue holder;
  EXPECT_EQ(Usage(data, holder).Find("prompt_tokens")->int_value(), 2);
  EXPECT_EQ(Usage(data, holder).Find("completion_tokens")->int_value(), 4);

  r = Post(sim.port(), "/v1/chat/completions",
           R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2})");
  ASSERT_EQ(r.status, 200);
  JsonValue v = MustParse(r.body);
  EXPECT_EQ(v.Find("object")->string_value(), "chat.completion");
  EXPECT_EQ(v.Find("choices")->items()[0].Find("message")->Find("role")->string_value(),
            "assistant");
}

TEST(SimHttpTest, RepeatedPromptHitsPrefixCacheAndResetClearsIt) {
  SimProcess sim(kFast);
  ASSERT_TRUE(sim.WaitHealthy());
  const std::string prompt = absl::StrCat("\"", Words(64), "\"");
  auto cached = [&] {
    HttpResponse r = Post(sim.port(), "/v1/completions", StreamBody(prompt, 2));
    EXPECT_EQ(r.status, 200);
    std::vector<std::string> data = SseData(r.body);
    JsonValue holder;
    return data.size() < 2 ? -1
                           : Usage(data, holder)
                                 .Find("prompt_tokens_details")
                                 ->Find("cached_tokens")
                                 ->int_value();
  };
  EXPECT_EQ(cached(), 0);
  // 64 tokens, block size 16: three full blocks hit (the last token is always computed).
  EXPECT_EQ(cached(), 48);
  EXPECT_EQ(Metric(sim.port(), "vllm:prefix_cache_queries_total"), 128);
  EXPECT_EQ(Metric(sim.port(), "vllm:prefix_cache_hits_total"), 48);
  EXPECT_EQ(Post(sim.port(), "/reset_prefix_cache", "").status, 200);
  EXPECT_EQ(cached(), 0);
}

TEST(SimHttpTest, HealthIs503WhileLoading) {
  // load_time 30 s * 0.01 = 0.3 s of loading.
  SimProcess sim(kFast, "load_time_seconds: 30\n");
  ASSERT_TRUE(sim.started());
  EXPECT_EQ(Get(sim.port(), "/health").status, 503);
  EXPECT_EQ(Post(sim.port(), "/v1/completions", R"({"prompt":"a"})").status, 503);
  EXPECT_TRUE(sim.WaitHealthy());
  EXPECT_EQ(Post(sim.port(), "/v1/completions", R"({"prompt":"a"})").status, 200);
}

TEST(SimHttpTest, ModelsEndpoint) {
  SimProcess sim(Flags({"--model", "my-model"}));
  ASSERT_TRUE(sim.WaitHealthy());
  JsonValue v = MustParse(Get(sim.port(), "/v1/models").body);
  EXPECT_EQ(v.Find("data")->items()[0].Find("id")->string_value(), "my-model");
  EXPECT_EQ(Post(sim.port(), "/v1/completions", R"({"model":"my-model","prompt":"a"})").status,
            200);
  EXPECT_EQ(Post(sim.port(), "/v1/completions", R"({"model":"other","prompt":"a"})").status, 404);
}

TEST(SimHttpTest, RouterMovesPrefillAndDecodeCounters) {
  SimProcess prefill(Flags({"--role", "prefill"}));
  SimProcess decode(Flags({"--role", "decode"}));
  ASSERT_TRUE(prefill.WaitHealthy());
  ASSERT_TRUE(decode.WaitHealthy());
  SimProcess router(
      Flags({"--role", "router", "--prefill-url", prefill.url(), "--decode-url", decode.url()}));
  ASSERT_TRUE(router.WaitHealthy());
  const std::string prompt = absl::StrCat("\"", Words(40), "\"");
  for (int round = 0; round < 2; ++round) {
    HttpResponse r = Post(router.port(), "/v1/completions", StreamBody(prompt, 5),
                          {{"x-request-id", absl::StrCat("route-", round)}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(r.complete);
    std::vector<std::string> data = SseData(r.body);
    ASSERT_EQ(data.size(), 5u + 2u);
    EXPECT_EQ(data.back(), "[DONE]");
    JsonValue holder;
    EXPECT_EQ(Usage(data, holder).Find("completion_tokens")->int_value(), 5);
    // The second round hits P's prefix cache (40 tokens -> 32 cached); the
    // client sees P's hit.
    EXPECT_EQ(Usage(data, holder).Find("prompt_tokens_details")->Find("cached_tokens")->int_value(),
              round == 0 ? 0 : 32);
  }
  EXPECT_EQ(Metric(prefill.port(), "vllm:request_success_total"), 2);
  EXPECT_EQ(Metric(decode.port(), "vllm:request_success_total"), 2);
  EXPECT_EQ(Metric(prefill.port(), "vllm:generation_tokens_total"), 2);  // one each
  EXPECT_EQ(Metric(decode.port(), "vllm:generation_tokens_total"), 10);
  EXPECT_EQ(Metric(prefill.port(), "vllm:prompt_tokens_total"), 80);
  EXPECT_EQ(Metric(decode.port(), "servelab_sim_kv_transfer_tokens_total"), 40 + 8);
  EXPECT_EQ(Metric(router.port(), "vllm:time_to_first_token_seconds_count"), 2);
  EXPECT_THAT(Get(decode.port(), "/debug/requests").body, HasSubstr("\"request_id\":\"route-1\""));
  EXPECT_THAT(Get(prefill.port(), "/debug/requests").body, HasSubstr("\"request_id\":\"route-1\""));
  // Resetting through the router clears both caches.
  EXPECT_EQ(Post(router.port(), "/reset_prefix_cache", "").status, 200);
  HttpResponse r = Post(router.port(), "/v1/completions", StreamBody(prompt, 1));
  JsonValue holder;
  std::vector<std::string> data = SseData(r.body);
  ASSERT_GE(data.size(), 2u);
  EXPECT_EQ(Usage(data, holder).Find("prompt_tokens_details")->Find("cached_tokens")->int_value(),
            0);
  // Bad input is answered by the router itself.
  EXPECT_EQ(Post(router.port(), "/v1/completions", R"({"prompt":"a","max_tokens":0})").status, 400);
}

TEST(SimHttpTest, RouterRejectsNonLoopbackUpstreams) {
  servelab::testing::RunResult r = servelab::testing::Run(
      {servelab::testing::BinPath("servelab-sim"), "--role", "router", "--port", "0",
       "--prefill-url", "http://10.1.2.3:8000", "--decode-url", "http://127.0.0.1:8001"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("not loopback"));
}

TEST(SimHttpTest, BadInputGets4xxAndServerKeepsServing) {
  SimProcess sim(kFast, "max_model_len: 64\n");
  ASSERT_TRUE(sim.WaitHealthy());
  struct Case {
    std::string path, body;
    int status;
  };
  std::vector<Case> cases = {
      {"/v1/completions", R"({"prompt": "a",)", 400},
      {"/v1/completions", "not json", 400},
      {"/v1/completions", R"({"max_tokens": 3})", 400},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": 0})", 400},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": -1})", 400},
      {"/v1/completions", absl::StrCat(R"({"prompt": ")", Words(65), R"("})"), 400},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": 64})", 400},
      {"/v1/chat/completions", R"({"prompt": "a"})", 400},
      {"/v1/nope", "{}", 404},
  };
  for (const Case& c : cases) {
    HttpResponse r = Post(sim.port(), c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.body;
    JsonValue v = MustParse(r.body);
    ASSERT_NE(v.Find("error"), nullptr) << r.body;
    EXPECT_EQ(v.Find("error")->Find("code")->int_value(), c.status);
    EXPECT_FALSE(v.Find("error")->Find("message")->string_value().empty());
  }
  EXPECT_EQ(Get(sim.port(), "/v1/completions").status, 405);
  EXPECT_EQ(Post(sim.port(), "/v1/completions", R"({"prompt":"still fine"})").status, 200);
  EXPECT_EQ(Metric(sim.port(), "vllm:request_success_total"), 1);
}

// Issue 10, R3: hostile requests, each refused with its status and an
// OpenAI-style error (when the HTTP itself could be read), and none of them
// starts a generation: the counters stay at zero until the one good request.
TEST(SimHttpTest, TheCatalogueOfHostileRequestsIsRefusedAndNothingStarts) {
  SimProcess sim(kFast, "max_model_len: 64\nmax_body_bytes: 1048576\n");
  ASSERT_TRUE(sim.WaitHealthy());
  const std::string deep_arrays = std::string(10000, '[') + std::string(10000, ']');
  std::string deep_objects;
  for (int i = 0; i < 10000; ++i) deep_objects += R"({"a":)";
  deep_objects += "1" + std::string(10000, '}');
  struct Case {
    std::string name, path, body;
    int status;
  };
  const std::vector<Case> json_cases = {
      {"arrays 10,000 deep", "/v1/completions", R"({"prompt":)" + deep_arrays + "}", 400},
      {"objects 10,000 deep", "/v1/completions", deep_objects, 400},
      {"body past max_body_bytes", "/v1/completions",
       absl::StrCat(R"({"prompt":")", std::string(2 << 20, 'a'), R"("})"), 413},
      {"NaN", "/v1/completions", R"({"prompt":"a","max_tokens":NaN})", 400},
      {"Infinity", "/v1/completions", R"({"prompt":"a","max_tokens":Infinity})", 400},
      {"number past double", "/v1/completions", R"({"prompt":"a","max_tokens":1e999})", 400},
      {"integer past int64", "/v1/completions",
       R"({"prompt":"a","max_tokens":99999999999999999999})", 400},
      {"fractional max_tokens", "/v1/completions", R"({"prompt":"a","max_tokens":3.5})", 400},
      {"max_tokens as a string", "/v1/completions", R"({"prompt":"a","max_tokens":"3"})", 400},
      {"negative token id", "/v1/completions", R"({"prompt":[5,-1]})", 400},
      {"token id past int64", "/v1/completions", R"({"prompt":[99999999999999999999]})", 400},
      {"empty token list", "/v1/completions", R"({"prompt":[]})", 400},
      {"batched prompts", "/v1/completions", R"({"prompt":[[1,2],[3]]})", 400},
      {"empty prompt text", "/v1/completions", R"({"prompt":""})", 400},
      {"min_tokens above max_tokens", "/v1/completions",
       R"({"prompt":"a","max_tokens":2,"min_tokens":3})", 400},
      {"n = 2", "/v1/completions", R"({"prompt":"a","n":2})", 400},
      {"stream as a string", "/v1/completions", R"({"prompt":"a","stream":"yes"})", 400},
      {"stream_options a list", "/v1/completions", R"({"prompt":"a","stream_options":[]})", 400},
      {"another model", "/v1/completions", R"({"prompt":"a","model":"other"})", 404},
      {"a JSON array body", "/v1/completions", R"([{"prompt":"a"}])", 400},
      {"trailing garbage", "/v1/completions", R"({"prompt":"a"} x)", 400},
      {"non-UTF-8 in a string", "/v1/completions", "{\"prompt\":\"a\xff\xfe\"}", 400},
      {"a lone surrogate escape", "/v1/completions", R"({"prompt":"\ud800"})", 400},
      {"a control character in a string", "/v1/completions", "{\"prompt\":\"a\x01\"}", 400},
      {"messages as a string", "/v1/chat/completions", R"({"messages":"hi"})", 400},
      {"a message without a role", "/v1/chat/completions", R"({"messages":[{"content":"x"}]})",
       400},
      {"an image content part", "/v1/chat/completions",
       R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", 400},
  };
  for (const Case& c : json_cases) {
    SCOPED_TRACE(c.name);
    HttpResponse r = Post(sim.port(), c.path, c.body);
    EXPECT_EQ(r.status, c.status) << r.body.substr(0, 200);
    JsonValue v = MustParse(r.body);
    if (v.Find("error") == nullptr) {
      ADD_FAILURE() << "no error object: " << r.body.substr(0, 200);
      continue;
    }
    EXPECT_EQ(v.Find("error")->Find("code")->int_value(), c.status);
    EXPECT_FALSE(v.Find("error")->Find("message")->string_value().empty());
  }
  const std::string post = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  const std::vector<Case> http_cases = {
      {"a request line that is not HTTP", "", "GARBAGE\r\n\r\n", 400},
      {"headers past 8 KiB", "",
       post + "X-Big: " + std::string(16 << 10, 'x') + "\r\nContent-Length: 2\r\n\r\n{}", 400},
      {"a body shorter than its Content-Length", "",
       post + "Content-Length: 100\r\n\r\n{\"prompt\":\"a\"}", 400},
      {"a Content-Length that is not a number", "", post + "Content-Length: -5\r\n\r\n{}", 400},
      {"a bad chunk size", "", post + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
       400},
      {"a chunked body past max_body_bytes", "",
       post + "Transfer-Encoding: chunked\r\n\r\n200000\r\n" + std::string(0x200000, 'a') +
           "\r\n0\r\n\r\n",
       413},
  };
  for (const Case& c : http_cases) {
    SCOPED_TRACE(c.name);
    HttpResponse r = RawHttp(sim.port(), c.body, absl::Seconds(10), /*half_close=*/true);
    EXPECT_EQ(r.status, c.status) << r.body.substr(0, 200);
  }
  // Nothing was admitted, counted or left running.
  EXPECT_EQ(Metric(sim.port(), "vllm:request_success_total"), 0);
  EXPECT_EQ(Metric(sim.port(), "vllm:prompt_tokens_total"), 0);
  EXPECT_EQ(Metric(sim.port(), "vllm:num_requests_running"), 0);
  EXPECT_EQ(Metric(sim.port(), "vllm:num_requests_waiting"), 0);
  EXPECT_EQ(Post(sim.port(), "/v1/completions", R"({"prompt":"still fine"})").status, 200);
  EXPECT_EQ(Metric(sim.port(), "vllm:request_success_total"), 1);
  std::printf("%zu hostile requests refused\n", json_cases.size() + http_cases.size());
}

TEST(SimHttpTest, ErrorFaultAnswers5xxForTheNextRequests) {
  SimProcess sim(kFast);
  ASSERT_TRUE(sim.WaitHealthy());
  HttpResponse set = Post(sim.port(), "/admin/faults", R"({"error_next": 2, "error_status": 500})");
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(Post(sim.port(), "/v1/completions", R"({"prompt":"a"})").status, 500);
  EXPECT_EQ(Post(sim.port(), "/v1/completions", R"({"prompt":"a"})").status, 500);
  EXPECT_EQ(Post(sim.port(), "/v1/completions", R"({"prompt":"a"})").status, 200);
  EXPECT_EQ(Metric(sim.port(), "servelab_sim_requests_failed_total"), 2);
  EXPECT_EQ(Post(sim.port(), "/admin/faults", R"({"bogus": 1})").status, 400);
}

TEST(SimHttpTest, ErrorFractionIsAboutTheFractionAndClearable) {
  SimProcess sim(Flags({"--seed", "3"}), "faults:\n  error_fraction: 0.5\n");
  ASSERT_TRUE(sim.WaitHealthy());
  int errors = 0;
  for (int i = 0; i < 40; ++i) {
    int s = Post(sim.port(), "/v1/completions", R"({"prompt":"a","max_tokens":1})").status;
    EXPECT_TRUE(s == 200 || s == 503) << s;
    errors += s == 503;
  }
  EXPECT_GT(errors, 8);
  EXPECT_LT(errors, 32);
  ASSERT_EQ(Post(sim.port(), "/admin/faults", R"({"clear": true})").status, 200);
  EXPECT_EQ(Post(sim.port(), "/v1/completions", R"({"prompt":"a","max_tokens":1})").status, 200);
}

TEST(SimHttpTest, HangFaultHoldsTheRequestUntilTheClientLeaves) {
  SimProcess sim(kFast);
  ASSERT_TRUE(sim.WaitHealthy());
  ASSERT_EQ(Post(sim.port(), "/admin/faults", R"({"hang_next": 1})").status, 200);
  HttpResponse hung;
  std::thread client([&] {
    hung = Http(sim.port(), "POST", "/v1/completions", R"({"prompt":"a","stream":true})", {},
                absl::Milliseconds(500));
  });
  // While the client waits, the request is running and nothing is answered.
  EXPECT_TRUE(WaitFor([&] { return Metric(sim.port(), "vllm:num_requests_running") == 1; },
                      absl::Seconds(5)));
  client.join();  // the client gives up after its 500 ms timeout and closes
  EXPECT_EQ(hung.status, 0);
  EXPECT_TRUE(WaitFor([&] { return Metric(sim.port(), "vllm:num_requests_running") == 0; },
                      absl::Seconds(5)));
  EXPECT_EQ(Post(sim.port(), "/v1/completions", R"({"prompt":"a"})").status, 200);
}

TEST(SimHttpTest, DropFaultCutsTheStreamMidResponse) {
  SimProcess sim(kFast);
  ASSERT_TRUE(sim.WaitHealthy());
  ASSERT_EQ(Post(sim.port(), "/admin/faults", R"({"drop_next": 1, "drop_after_tokens": 3})").status,
            200);
  HttpResponse r = Post(sim.port(), "/v1/completions", StreamBody("[1,2,3]", 10));
  EXPECT_EQ(r.status, 200);
  EXPECT_FALSE(r.complete);
  std::vector<std::string> data = SseData(r.body);
  EXPECT_EQ(data.size(), 3u);
  EXPECT_THAT(r.body, ::testing::Not(HasSubstr("[DONE]")));
  EXPECT_EQ(Metric(sim.port(), "servelab_sim_requests_failed_total"), 1);
  HttpResponse ok = Post(sim.port(), "/v1/completions", StreamBody("[1,2,3]", 10));
  EXPECT_TRUE(ok.complete);
  EXPECT_EQ(SseData(ok.body).size(), 12u);
}

TEST(SimHttpTest, ExitAfterRequestsFaultExitsTheProcess) {
  SimProcess sim(kFast);
  ASSERT_TRUE(sim.WaitHealthy());
  ASSERT_EQ(
      Post(sim.port(), "/admin/faults", R"({"exit_after_requests": 2, "exit_code": 71})").status,
      200);
  EXPECT_EQ(Post(sim.port(), "/v1/completions", StreamBody("[1]", 2)).status, 200);
  HttpResponse second = Post(sim.port(), "/v1/completions", StreamBody("[1]", 2));
  EXPECT_EQ(second.status, 200);
  EXPECT_TRUE(second.complete);
  EXPECT_EQ(sim.process().Wait(absl::Seconds(10)), 71);
  EXPECT_FALSE(Get(sim.port(), "/health").connected);
}

TEST(SimHttpTest, RefuseConnectionsFaultThenRecovers) {
  SimProcess sim(kFast);
  ASSERT_TRUE(sim.WaitHealthy());
  // 100 modelled seconds = 1 s.
  ASSERT_EQ(Post(sim.port(), "/admin/faults", R"({"refuse_connections_seconds": 100})").status,
            200);
  EXPECT_TRUE(WaitFor([&] { return !Get(sim.port(), "/health").connected; }, absl::Seconds(2)));
  EXPECT_TRUE(WaitFor([&] { return Get(sim.port(), "/health").status == 200; }, absl::Seconds(10)));
}

TEST(SimHttpTest, SlowStartFaultAtStartAndAtRunTime) {
  // Config: load_time 1 s + slow_start 40 s, scaled by 0.01 = 0.41 s.
  SimProcess sim(kFast, "load_time_seconds: 1\nfaults:\n  slow_start_seconds: 40\n");
  ASSERT_TRUE(sim.started());
  EXPECT_EQ(Get(sim.port(), "/health").status, 503);
  ASSERT_TRUE(sim.WaitHealthy());
  ASSERT_EQ(Post(sim.port(), "/admin/faults", R"({"slow_start_seconds": 30})").status, 200);
  EXPECT_EQ(Get(sim.port(), "/health").status, 503);
  EXPECT_EQ(Post(sim.port(), "/v1/completions", R"({"prompt":"a"})").status, 503);
  EXPECT_TRUE(sim.WaitHealthy());
}

TEST(SimHttpTest, OverlapWitnessPerLoadTag) {
  SimProcess sim(kFast);
  ASSERT_TRUE(sim.WaitHealthy());
  for (const char* tag : {"exp-a", "exp-b"}) {
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(
          Post(sim.port(), "/v1/completions", StreamBody("[1,2]", 3), {{"x-servelab-load", tag}})
              .status,
          200);
    }
  }
  JsonValue v = MustParse(Get(sim.port(), "/debug/loads").body);
  const JsonValue* a = v.Find("loads")->Find("exp-a");
  const JsonValue* b = v.Find("loads")->Find("exp-b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->Find("arrived")->int_value(), 3);
  EXPECT_EQ(a->Find("in_flight")->int_value(), 0);
  EXPECT_LE(a->Find("first_arrival_unix")->number(), a->Find("last_completion_unix")->number());
  EXPECT_LE(a->Find("last_completion_unix")->number(), b->Find("first_arrival_unix")->number());
  EXPECT_THAT(Get(sim.port(), "/metrics").body,
              HasSubstr("servelab_sim_load_last_completion_timestamp_seconds{load=\"exp-a\"}"));
}

TEST(SimHttpTest, DebugRequestsReportServerSideTtft) {
  SimProcess sim(kFast, "prefill_overhead_seconds: 5\ncold_start_requests: 0\n");  // 50 ms TTFT
  ASSERT_TRUE(sim.WaitHealthy());
  ASSERT_EQ(Post(sim.port(), "/v1/completions", StreamBody("[1,2]", 2), {{"x-request-id", "req-7"}})
                .status,
            200);
  JsonValue v = MustParse(Get(sim.port(), "/debug/requests").body);
  const JsonValue& rec = v.Find("requests")->items().back();
  EXPECT_EQ(rec.Find("request_id")->string_value(), "req-7");
  EXPECT_GE(rec.Find("ttft_seconds")->number(), 0.05);
  EXPECT_LT(rec.Find("ttft_seconds")->number(), 1.0);
  EXPECT_EQ(rec.Find("completion_tokens")->int_value(), 2);
  EXPECT_NEAR(Metric(sim.port(), "vllm:time_to_first_token_seconds_sum"),
              rec.Find("ttft_seconds")->number(), 0.01);
}

// Server-side TTFT starts at the request's first byte, as the client's does
// at its send: a request whose body comes 300 ms after its headers has a
// TTFT of the modelled 50 ms plus those 300 ms, and an arrival time from
// before the pause. The bounds leave 50 ms for the sim's thread to get to the
// readable socket late (CI saw it stamp 0.4 ms after the headers came): a
// request stamped after its body would show about 50 ms TTFT and no queue.
TEST(SimHttpTest, ArrivalIsTheRequestsFirstByte) {
  SimProcess sim(kFast, "prefill_overhead_seconds: 5\ncold_start_requests: 0\n");  // 50 ms TTFT
  ASSERT_TRUE(sim.WaitHealthy());
  const std::string request = ClosingPost(StreamBody("[1,2]", 2));
  const double sent_unix = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  HttpResponse r =
      RawHttp(sim.port(), request, absl::Seconds(20), /*half_close=*/false,
              {.split_at = request.find("\r\n\r\n") + 4, .pause = absl::Milliseconds(300)});
  ASSERT_EQ(r.status, 200) << r.body;
  JsonValue v = MustParse(Get(sim.port(), "/debug/requests").body);
  const JsonValue& rec = v.Find("requests")->items().back();
  ASSERT_EQ(rec.Find("request_id")->string_value(), "split-1");
  EXPECT_GE(rec.Find("ttft_seconds")->number(), 0.3);
  EXPECT_LT(rec.Find("ttft_seconds")->number(), 2.0);
  EXPECT_NEAR(rec.Find("arrival_unix")->number(), sent_unix, 0.1);
  EXPECT_GE(rec.Find("queue_seconds")->number(), 0.25);
}

// A request arrives when its bytes reach the sim's socket, by the kernel's
// stamp, not when the sim's thread gets to read them: here the sim is
// stopped for 300 ms with the whole request in its socket. Stamped at the
// read, the request would show about 50 ms TTFT and no queue.
TEST(SimHttpTest, ArrivalIsWhenTheBytesReachTheSocketNotWhenTheSimReads) {
  SimProcess sim(kFast, "prefill_overhead_seconds: 5\ncold_start_requests: 0\n");  // 50 ms TTFT
  ASSERT_TRUE(sim.WaitHealthy());
  const double sent_unix = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  ASSERT_TRUE(StopProcess(sim.process().pid()));
  HttpResponse r;
  std::thread client([&] {
    r = RawHttp(sim.port(), ClosingPost(StreamBody("[1,2]", 2)), absl::Seconds(20),
                /*half_close=*/false);
  });
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_EQ(kill(sim.process().pid(), SIGCONT), 0);
  client.join();
  ASSERT_EQ(r.status, 200) << r.body;
  JsonValue v = MustParse(Get(sim.port(), "/debug/requests").body);
  const JsonValue& rec = v.Find("requests")->items().back();
  EXPECT_GE(rec.Find("ttft_seconds")->number(), 0.3);
  EXPECT_LT(rec.Find("ttft_seconds")->number(), 2.0);
  EXPECT_NEAR(rec.Find("arrival_unix")->number(), sent_unix, 0.1);
  EXPECT_GE(rec.Find("queue_seconds")->number(), 0.25);
}

TEST(SimHttpTest, MaxNumSeqsQueuesTheRest) {
  // 2 slots, 4 concurrent requests of ~200 ms each: two wait.
  SimProcess sim(kFast, "max_num_seqs: 2\ndecode_base_seconds: 1\ncold_start_requests: 0\n");
  ASSERT_TRUE(sim.WaitHealthy());
  std::vector<std::thread> clients;
  std::vector<int> statuses(4);
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      statuses[i] = Post(sim.port(), "/v1/completions", StreamBody("[1]", 20)).status;
    });
  }
  EXPECT_TRUE(WaitFor([&] { return Metric(sim.port(), "vllm:num_requests_waiting") == 2; },
                      absl::Seconds(5)));
  EXPECT_EQ(Metric(sim.port(), "vllm:num_requests_running"), 2);
  for (auto& c : clients) c.join();
  EXPECT_EQ(statuses, std::vector<int>(4, 200));
  EXPECT_EQ(Metric(sim.port(), "vllm:request_success_total"), 4);
  EXPECT_GT(Metric(sim.port(), "vllm:request_queue_time_seconds_sum"), 0.1);
}

}  // namespace
}  // namespace servelab::sim
