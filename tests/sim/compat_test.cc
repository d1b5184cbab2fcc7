// servelab-sim's --compat profiles against the real binary over HTTP: what a
// client or orchestrator of the real engine has to cope with -- routes that
// exist only with a flag or an environment variable, refused cache resets,
// engine metric names, proxies that drop client headers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
using ::servelab::sim::testing::SimProcess;
using ::servelab::sim::testing::SseData;
using ::servelab::testing::WaitFor;
using ::testing::HasSubstr;
using ::testing::Not;

// Modelled time 100x faster: 1 modelled second = 10 ms.
std::vector<std::string> Flags(std::vector<std::string> extra) {
  std::vector<std::string> f = {"--time-scale", "0.01"};
  f.insert(f.end(), extra.begin(), extra.end());
  return f;
}

// Flags of one role under a compat profile (`profile`: "--compat X" and its
// switches).
std::vector<std::string> ProfileFlags(const std::vector<std::string>& profile,
                                      const std::vector<std::string>& role) {
  std::vector<std::string> f = profile;
  f.insert(f.end(), role.begin(), role.end());
  return Flags(f);
}

JsonValue MustParse(const std::string& s) {
  absl::StatusOr<JsonValue> v = ParseJson(s);
  EXPECT_TRUE(v.ok()) << v.status() << " in " << s;
  return v.ok() ? *v : JsonValue();
}

std::string Words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) absl::StrAppend(&s, i ? " " : "", "w", i);
  return s;
}

// 64 words: a repeat hits three 16-token blocks (48 tokens).
const std::string kPrompt = Words(64);

std::string Body(const std::string& prompt, int tokens, bool stream,
                 const std::string& extra = "") {
  return absl::StrCat(R"({"prompt":")", prompt, R"(","max_tokens":)", tokens, R"(,"min_tokens":)",
                      tokens, R"(,"ignore_eos":true,"stream":)", stream ? "true" : "false",
                      stream ? R"(,"stream_options":{"include_usage":true})" : "", extra, "}");
}

// The usage object of a completion (the usage chunk when streamed).
JsonValue UsageOf(const HttpResponse& r, bool stream) {
  EXPECT_EQ(r.status, 200) << r.body;
  if (!stream) {
    JsonValue v = MustParse(r.body);
    const JsonValue* u = v.Find("usage");
    return u ? *u : JsonValue();
  }
  std::vector<std::string> data = SseData(r.body);
  if (data.size() < 2) return JsonValue();
  JsonValue chunk = MustParse(data[data.size() - 2]);
  const JsonValue* u = chunk.Find("usage");
  return u ? *u : JsonValue();
}

// cached_tokens, or -1 when prompt_tokens_details is absent, -2 when null.
int64_t CachedTokens(const JsonValue& usage) {
  const JsonValue* details = usage.Find("prompt_tokens_details");
  if (details == nullptr) return -1;
  if (details->is_null()) return -2;
  const JsonValue* cached = details->Find("cached_tokens");
  return cached != nullptr ? cached->int_value() : -3;
}

const JsonValue& LastRequest(int port, JsonValue& holder) {
  holder = MustParse(Get(port, "/debug/requests").body);
  static const JsonValue kNull;
  const JsonValue* list = holder.Find("requests");
  return list != nullptr && !list->items().empty() ? list->items().back() : kNull;
}

bool WaitProxyReady(int port) {
  return WaitFor([&] { return Get(port, "/healthcheck").status == 200; }, absl::Seconds(10));
}

TEST(SimCompatTest, VllmResetPrefixCacheIsNotRoutedWithoutDevMode) {
  SimProcess vllm(Flags({"--compat", "vllm"}), "", {"VLLM_SERVER_DEV_MODE=0"});
  ASSERT_TRUE(vllm.WaitHealthy());
  HttpResponse r = Post(vllm.port(), "/reset_prefix_cache", "");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, R"({"detail":"Not Found"})");
  SimProcess dev(Flags({"--compat", "vllm-ascend"}), "", {"VLLM_SERVER_DEV_MODE=1"});
  ASSERT_TRUE(dev.WaitHealthy());
  EXPECT_EQ(Post(dev.port(), "/reset_prefix_cache", "").status, 200);
}

TEST(SimCompatTest, VllmResetIsRefusedWhileALeaseHoldsBlocksThenWorks) {
  // Lease 300 modelled s = 3 s.
  SimProcess p(Flags({"--compat", "vllm", "--role", "prefill"}), "kv_lease_seconds: 300\n",
               {"VLLM_SERVER_DEV_MODE=1"});
  ASSERT_TRUE(p.WaitHealthy());
  HttpResponse prefill =
      Post(p.port(), "/v1/completions",
           Body(kPrompt, 1, false, R"(,"kv_transfer_params":{"do_remote_decode":true})"));
  ASSERT_EQ(prefill.status, 200) << prefill.body;
  // P hands the decode side its blocks, as NIXL does.
  JsonValue answer = MustParse(prefill.body);
  const JsonValue* params = answer.Find("kv_transfer_params");
  ASSERT_NE(params, nullptr) << prefill.body;
  EXPECT_TRUE(params->Find("do_remote_prefill")->bool_value());
  // The request is over, its blocks are not.
  EXPECT_EQ(Metric(p.port(), "vllm:num_requests_running"), 0);
  EXPECT_EQ(Metric(p.port(), "vllm:num_requests_waiting"), 0);
  EXPECT_GT(Metric(p.port(), "vllm:kv_cache_usage_perc"), 0);
  // Refused, yet 200 (upstream does not check the result).
  EXPECT_EQ(Post(p.port(), "/reset_prefix_cache", "").status, 200);
  ASSERT_EQ(Post(p.port(), "/v1/completions", Body(kPrompt, 1, false)).status, 200);
  EXPECT_EQ(Metric(p.port(), "vllm:prefix_cache_hits_total"), 48);  // still cached
  // Once the lease is over the reset evicts.
  ASSERT_TRUE(WaitFor([&] { return Metric(p.port(), "vllm:kv_cache_usage_perc") == 0; },
                      absl::Seconds(10)));
  EXPECT_EQ(Post(p.port(), "/reset_prefix_cache", "").status, 200);
  ASSERT_EQ(Post(p.port(), "/v1/completions", Body(kPrompt, 1, false)).status, 200);
  EXPECT_EQ(Metric(p.port(), "vllm:prefix_cache_hits_total"), 48);  // no new hit
}

TEST(SimCompatTest, VllmResetIsRefusedWhileARequestRuns) {
  SimProcess sim(Flags({"--compat", "vllm"}), "", {"VLLM_SERVER_DEV_MODE=1"});
  ASSERT_TRUE(sim.WaitHealthy());
  ASSERT_EQ(Post(sim.port(), "/v1/completions", Body(kPrompt, 1, false)).status, 200);
  ASSERT_EQ(Post(sim.port(), "/admin/faults", R"({"hang_next": 1})").status, 200);
  std::thread client([&] {
    Http(sim.port(), "POST", "/v1/completions", Body("a b", 1, false), {}, absl::Seconds(1));
  });
  ASSERT_TRUE(WaitFor([&] { return Metric(sim.port(), "vllm:num_requests_running") == 1; },
                      absl::Seconds(5)));
  EXPECT_GT(Metric(sim.port(), "vllm:kv_cache_usage_perc"), 0);
  EXPECT_EQ(Post(sim.port(), "/reset_prefix_cache", "").status, 200);
  client.join();
  ASSERT_EQ(Post(sim.port(), "/v1/completions", Body(kPrompt, 1, false)).status, 200);
  EXPECT_EQ(Metric(sim.port(), "vllm:prefix_cache_hits_total"), 48);
}

TEST(SimCompatTest, VllmCachedTokensOnlyWithTheFlagAndAHit) {
  SimProcess plain(Flags({"--compat", "vllm"}));
  SimProcess details(Flags({"--compat", "vllm", "--enable-prompt-tokens-details"}));
  ASSERT_TRUE(plain.WaitHealthy());
  ASSERT_TRUE(details.WaitHealthy());
  for (bool stream : {true, false}) {
    SCOPED_TRACE(stream ? "stream" : "non-stream");
    const std::string prompt = stream ? kPrompt : absl::StrCat("q ", Words(63));
    // No flag: never reported; non-streaming bodies say null (model_dump).
    const int64_t absent = stream ? -1 : -2;
    EXPECT_EQ(CachedTokens(
                  UsageOf(Post(plain.port(), "/v1/completions", Body(prompt, 2, stream)), stream)),
              absent);
    EXPECT_EQ(CachedTokens(
                  UsageOf(Post(plain.port(), "/v1/completions", Body(prompt, 2, stream)), stream)),
              absent);
    // Flag: reported only when something was cached.
    EXPECT_EQ(CachedTokens(UsageOf(Post(details.port(), "/v1/completions", Body(prompt, 2, stream)),
                                   stream)),
              absent);
    EXPECT_EQ(CachedTokens(UsageOf(Post(details.port(), "/v1/completions", Body(prompt, 2, stream)),
                                   stream)),
              48);
  }
  EXPECT_EQ(Metric(plain.port(), "vllm:prefix_cache_hits_total"), 96);
}

TEST(SimCompatTest, SglangMetricsOnlyWithEnableMetricsAndSpelledAsSglang) {
  SimProcess off(Flags({"--compat", "sglang"}));
  ASSERT_TRUE(off.WaitHealthy());
  EXPECT_EQ(Get(off.port(), "/metrics").status, 404);
  SimProcess on(Flags({"--compat", "sglang", "--enable-metrics"}));
  ASSERT_TRUE(on.WaitHealthy());
  ASSERT_EQ(Post(on.port(), "/v1/completions", Body("a b c d e", 3, true)).status, 200);
  HttpResponse m = Get(on.port(), "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_THAT(m.body, Not(HasSubstr("vllm:")));
  for (const char* name :
       {"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage",
        "sglang:cache_hit_rate", "sglang:num_prefill_prealloc_queue_reqs",
        "sglang:num_prefill_inflight_queue_reqs", "sglang:num_decode_prealloc_queue_reqs",
        "sglang:num_decode_transfer_queue_reqs", "sglang:cached_tokens_total",
        "sglang:time_to_first_token_seconds_count", "sglang:e2e_request_latency_seconds_count"}) {
    EXPECT_THAT(m.body, HasSubstr(absl::StrCat("\n", name, "{"))) << name;
  }
  EXPECT_EQ(Metric(on.port(), "sglang:prompt_tokens_total"), 5);
  EXPECT_EQ(Metric(on.port(), "sglang:generation_tokens_total"), 3);
  EXPECT_EQ(Metric(on.port(), "sglang:num_requests_total"), 1);
  EXPECT_EQ(Get(on.port(), "/health").status, 200);
  EXPECT_EQ(Get(on.port(), "/health_generate").status, 200);
  JsonValue models = MustParse(Get(on.port(), "/v1/models").body);
  EXPECT_EQ(models.Find("data")->items()[0].Find("owned_by")->string_value(), "sglang");
}

TEST(SimCompatTest, SglangFlushCacheIsRefusedWhileARequestRunsThenFlushes) {
  // One decode step = 50 modelled s = 0.5 s; the long request runs ~1 s.
  SimProcess sim(Flags({"--compat", "sglang", "--enable-metrics", "--enable-cache-report"}),
                 "decode_base_seconds: 50\n");
  ASSERT_TRUE(sim.WaitHealthy());
  EXPECT_EQ(Post(sim.port(), "/reset_prefix_cache", "").status, 404);
  EXPECT_EQ(
      CachedTokens(UsageOf(Post(sim.port(), "/v1/completions", Body(kPrompt, 1, false)), false)),
      -1);  // nothing cached yet: no details at all
  EXPECT_EQ(
      CachedTokens(UsageOf(Post(sim.port(), "/v1/completions", Body(kPrompt, 1, false)), false)),
      48);
  std::thread client([&] { Post(sim.port(), "/v1/completions", Body("x y", 3, true)); });
  ASSERT_TRUE(WaitFor([&] { return Metric(sim.port(), "sglang:num_running_reqs") == 1; },
                      absl::Seconds(5)));
  HttpResponse refused = Get(sim.port(), "/flush_cache");
  EXPECT_EQ(refused.status, 400);
  EXPECT_THAT(refused.body, HasSubstr("When there are running or waiting requests"));
  EXPECT_EQ(Post(sim.port(), "/flush_cache", "").status, 400);
  client.join();
  EXPECT_EQ(Post(sim.port(), "/flush_cache", "").status, 200);
  EXPECT_EQ(
      CachedTokens(UsageOf(Post(sim.port(), "/v1/completions", Body(kPrompt, 1, false)), false)),
      -1);  // flushed
  EXPECT_EQ(Metric(sim.port(), "sglang:cached_tokens_total"), 48);
}

TEST(SimCompatTest, SglangCachedTokensOnlyWithEnableCacheReport) {
  SimProcess sim(Flags({"--compat", "sglang"}));
  ASSERT_TRUE(sim.WaitHealthy());
  for (bool stream : {true, false}) {
    for (int i = 0; i < 2; ++i) {
      const std::string prompt = stream ? kPrompt : absl::StrCat("q ", Words(63));
      EXPECT_EQ(CachedTokens(
                    UsageOf(Post(sim.port(), "/v1/completions", Body(prompt, 1, stream)), stream)),
                -1);
    }
  }
}

TEST(SimCompatTest, SglangPdQueueGaugesWhileTheTransferIsInFlight) {
  const std::vector<std::string> sglang = {"--compat", "sglang", "--enable-metrics"};
  auto with = [&](std::vector<std::string> extra) { return ProfileFlags(sglang, extra); };
  // P leases its blocks 3 s; D's transfer takes 1 s.
  SimProcess p(with({"--role", "prefill"}), "kv_lease_seconds: 300\n");
  SimProcess d(with({"--role", "decode"}), "kv_transfer_overhead_seconds: 100\n");
  ASSERT_TRUE(p.WaitHealthy());
  ASSERT_TRUE(d.WaitHealthy());
  SimProcess router(with({"--role", "router", "--prefill-url", p.url(), "--decode-url", d.url()}));
  ASSERT_TRUE(router.WaitHealthy());
  std::thread client([&] {
    Post(router.port(), "/v1/completions", Body(kPrompt, 2, true, R"(,"user":"body-tag")"),
         {{"x-request-id", "sg-1"}, {"x-servelab-load", "header-tag"}});
  });
  ASSERT_TRUE(
      WaitFor([&] { return Metric(d.port(), "sglang:num_decode_transfer_queue_reqs") == 1; },
              absl::Seconds(5)));
  EXPECT_EQ(Metric(d.port(), "sglang:num_running_reqs"), 0);
  EXPECT_EQ(Metric(d.port(), "sglang:num_queue_reqs"), 0);
  EXPECT_EQ(Metric(p.port(), "sglang:num_prefill_inflight_queue_reqs"), 1);
  EXPECT_EQ(Metric(p.port(), "sglang:num_running_reqs"), 0);
  EXPECT_EQ(Metric(p.port(), "sglang:num_queue_reqs"), 0);
  EXPECT_GT(Metric(p.port(), "sglang:token_usage"), 0);
  // Not idle while the lease lasts.
  EXPECT_EQ(Post(p.port(), "/flush_cache", "").status, 400);
  client.join();
  ASSERT_TRUE(
      WaitFor([&] { return Metric(p.port(), "sglang:num_prefill_inflight_queue_reqs") == 0; },
              absl::Seconds(10)));
  EXPECT_EQ(Metric(p.port(), "sglang:token_usage"), 0);
  EXPECT_EQ(Metric(d.port(), "sglang:num_decode_transfer_queue_reqs"), 0);
  EXPECT_EQ(Post(p.port(), "/flush_cache", "").status, 200);
  EXPECT_EQ(Post(router.port(), "/reset_prefix_cache", "").status, 404);
  // sgl-router forwards x-request-id but not the other client headers.
  JsonValue holder;
  EXPECT_EQ(LastRequest(d.port(), holder).Find("request_id")->string_value(), "sg-1");
  JsonValue loads = MustParse(Get(d.port(), "/debug/loads").body);
  EXPECT_NE(loads.Find("loads")->Find("body-tag"), nullptr);
  EXPECT_EQ(loads.Find("loads")->Find("header-tag"), nullptr);
}

// sgl-router takes token ids only on SGLang's native /generate: its
// /v1/completions prompt is a string or a list of strings. /generate streams
// cumulative text with meta_info counts and ends with [DONE]; the load tag
// travels in rid, the only free field sgl-router keeps.
TEST(SimCompatTest, SglangRouterTakesTokenIdsOnlyOnGenerate) {
  const std::vector<std::string> sglang = {"--compat", "sglang", "--enable-metrics"};
  auto with = [&](std::vector<std::string> extra) { return ProfileFlags(sglang, extra); };
  SimProcess p(with({"--role", "prefill"}));
  SimProcess d(with({"--role", "decode"}));
  ASSERT_TRUE(p.WaitHealthy());
  ASSERT_TRUE(d.WaitHealthy());
  SimProcess router(with({"--role", "router", "--prefill-url", p.url(), "--decode-url", d.url()}));
  ASSERT_TRUE(router.WaitHealthy());

  HttpResponse ids =
      Post(router.port(), "/v1/completions", R"({"prompt":[1,2,3],"max_tokens":2,"stream":false})");
  EXPECT_EQ(ids.status, 422) << ids.body;
  EXPECT_THAT(ids.body, HasSubstr("StringOrArray"));

  const std::string generate =
      R"({"input_ids":[5,6,7,8,9],"sampling_params":{"max_new_tokens":3,"ignore_eos":true},)"
      R"("stream":true,"rid":"exp-9/formal/1#exp-9/4/1/0"})";
  HttpResponse r = Post(router.port(), "/generate", generate);
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<std::string> data = SseData(r.body);
  ASSERT_EQ(data.size(), 4u) << r.body;  // three tokens, then [DONE]
  EXPECT_EQ(data.back(), "[DONE]");
  std::string text;
  for (int i = 0; i < 3; ++i) {
    JsonValue chunk = MustParse(data[i]);
    const JsonValue* meta = chunk.Find("meta_info");
    ASSERT_NE(meta, nullptr) << data[i];
    EXPECT_EQ(meta->Find("completion_tokens")->int_value(), i + 1);
    EXPECT_EQ(meta->Find("prompt_tokens")->int_value(), 5);
    EXPECT_NE(meta->Find("cached_tokens"), nullptr);
    EXPECT_EQ(meta->Find("id")->string_value(), "exp-9/formal/1#exp-9/4/1/0");
    EXPECT_EQ(chunk.Find("output_ids")->items().size(), static_cast<size_t>(i + 1));
    // Cumulative: each chunk's text starts with the previous one's.
    const std::string now = chunk.Find("text")->string_value();
    EXPECT_EQ(now.substr(0, text.size()), text);
    text = now;
    EXPECT_EQ(meta->Find("finish_reason")->is_null(), i < 2);
  }
  EXPECT_EQ(
      MustParse(data[2]).Find("meta_info")->Find("finish_reason")->Find("type")->string_value(),
      "length");
  JsonValue loads = MustParse(Get(d.port(), "/debug/loads").body);
  EXPECT_EQ(loads.Find("loads")->Find("exp-9/formal/1")->Find("completed")->int_value(), 1);
  // Both servers saw it, as a P/D pair.
  EXPECT_EQ(Metric(p.port(), "sglang:prompt_tokens_total"), 5);
  EXPECT_EQ(Metric(d.port(), "sglang:generation_tokens_total"), 3);
  // Only the SGLang profile serves /generate: vLLM has no such route.
  SimProcess vllm(Flags({"--compat", "vllm"}));
  ASSERT_TRUE(vllm.WaitHealthy());
  EXPECT_EQ(Post(vllm.port(), "/generate", generate).status, 404);
}

// Behind vLLM's toy proxy the client sees decode's usage, and vLLM's decode
// counts the KV it loaded from prefill as cached: every prompt token but the
// last (vllm-project/vllm#43370), whatever prefill's cache hit was.
TEST(SimCompatTest, VllmDecodeReportsTheKvItLoadedAsCached) {
  const std::vector<std::string> vllm = {"--compat", "vllm", "--enable-prompt-tokens-details"};
  auto with = [&](std::vector<std::string> extra) { return ProfileFlags(vllm, extra); };
  SimProcess p(with({"--role", "prefill"}));
  SimProcess d(with({"--role", "decode"}));
  ASSERT_TRUE(p.WaitHealthy());
  ASSERT_TRUE(d.WaitHealthy());
  SimProcess router(with({"--role", "router", "--prefill-url", p.url(), "--decode-url", d.url()}));
  ASSERT_TRUE(WaitProxyReady(router.port()));
  // A first request: nothing cached on P, yet D says 63 of 64.
  EXPECT_EQ(
      CachedTokens(UsageOf(Post(router.port(), "/v1/completions", Body(kPrompt, 2, true)), true)),
      63);
  EXPECT_EQ(Metric(p.port(), "vllm:prefix_cache_hits_total"), 0);
}

TEST(SimCompatTest, VllmProxiesAnswerUpstreamFailuresAsUpstreamDoes) {
  SimProcess p(Flags({"--compat", "vllm", "--role", "prefill"}));
  SimProcess d(Flags({"--compat", "vllm", "--role", "decode"}));
  ASSERT_TRUE(p.WaitHealthy());
  ASSERT_TRUE(d.WaitHealthy());
  SimProcess toy(Flags(
      {"--compat", "vllm", "--role", "router", "--prefill-url", p.url(), "--decode-url", d.url()}));
  SimProcess ascend(Flags({"--compat", "vllm-ascend", "--role", "router", "--prefill-url", p.url(),
                           "--decode-url", d.url()}));
  ASSERT_TRUE(WaitProxyReady(toy.port()));
  ASSERT_TRUE(WaitProxyReady(ascend.port()));
  const std::string body = Body("a b c", 4, true);
  // D fails after the proxy has already answered 200.
  ASSERT_EQ(Post(d.port(), "/admin/faults", R"({"error_next": 2})").status, 200);
  HttpResponse cut = Post(toy.port(), "/v1/completions", body);
  EXPECT_EQ(cut.status, 200);
  EXPECT_FALSE(cut.complete);  // the toy proxy's generator raised
  HttpResponse empty = Post(ascend.port(), "/v1/completions", body);
  EXPECT_EQ(empty.status, 200);
  EXPECT_TRUE(empty.complete);  // vllm-ascend logs it and ends the body
  EXPECT_EQ(empty.body, "");
  // P fails: the toy proxy raises (500), vllm-ascend passes P's answer on.
  ASSERT_EQ(Post(p.port(), "/admin/faults", R"({"error_next": 2, "error_status": 503})").status,
            200);
  HttpResponse toy_error = Post(toy.port(), "/v1/completions", body);
  EXPECT_EQ(toy_error.status, 500);
  EXPECT_EQ(toy_error.body, "Internal Server Error");
  HttpResponse ascend_error = Post(ascend.port(), "/v1/completions", body);
  EXPECT_EQ(ascend_error.status, 503);
  EXPECT_THAT(ascend_error.body, HasSubstr("injected fault"));
  // Bad input.
  EXPECT_EQ(Post(toy.port(), "/v1/completions", R"({"prompt":"a","max_tokens":0})").status, 500);
  EXPECT_EQ(Post(ascend.port(), "/v1/completions", R"({"prompt":"a","max_tokens":0})").status, 400);
  EXPECT_EQ(Post(toy.port(), "/v1/completions", "not json").status, 500);
  // Still serving.
  HttpResponse ok = Post(toy.port(), "/v1/completions", body);
  EXPECT_EQ(ok.status, 200);
  EXPECT_TRUE(ok.complete);
}

TEST(SimCompatTest, VllmToyProxyServesOnlyItsRoutesAndDropsClientHeaders) {
  SimProcess p(Flags({"--compat", "vllm", "--role", "prefill"}));
  SimProcess d(Flags({"--compat", "vllm", "--role", "decode"}));
  ASSERT_TRUE(p.WaitHealthy());
  ASSERT_TRUE(d.WaitHealthy());
  SimProcess router(Flags(
      {"--compat", "vllm", "--role", "router", "--prefill-url", p.url(), "--decode-url", d.url()}));
  ASSERT_TRUE(WaitProxyReady(router.port()));
  for (const char* path :
       {"/health", "/v1/models", "/metrics", "/debug/loads", "/debug/requests"}) {
    EXPECT_EQ(Get(router.port(), path).status, 404) << path;
  }
  EXPECT_EQ(Post(router.port(), "/reset_prefix_cache", "").status, 404);
  JsonValue health = MustParse(Get(router.port(), "/healthcheck").body);
  EXPECT_EQ(health.Find("status")->string_value(), "ok");
  EXPECT_EQ(health.Find("prefill_instances")->int_value(), 1);
  EXPECT_EQ(health.Find("decode_instances")->int_value(), 1);

  HttpResponse r =
      Post(router.port(), "/v1/completions", Body(kPrompt, 3, true, R"(,"user":"body-tag")"),
           {{"x-request-id", "client-1"}, {"x-servelab-load", "header-tag"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.headers["content-type"], "application/json");  // StreamingResponse's media_type
  EXPECT_EQ(SseData(r.body).back(), "[DONE]");
  JsonValue ph, dh;
  const JsonValue& on_p = LastRequest(p.port(), ph);
  const JsonValue& on_d = LastRequest(d.port(), dh);
  ASSERT_NE(on_d.Find("request_id"), nullptr);
  const std::string id = on_d.Find("request_id")->string_value();
  EXPECT_FALSE(id.empty());
  EXPECT_NE(id, "client-1");
  EXPECT_EQ(on_p.Find("request_id")->string_value(), id);
  for (int port : {p.port(), d.port()}) {
    JsonValue loads = MustParse(Get(port, "/debug/loads").body);
    EXPECT_NE(loads.Find("loads")->Find("body-tag"), nullptr) << port;
    EXPECT_EQ(loads.Find("loads")->Find("header-tag"), nullptr) << port;
  }
  EXPECT_EQ(Metric(d.port(), "vllm:request_success_total"), 1);
}

TEST(SimCompatTest, VllmAscendProxySpreadsConcurrentRequestsOverTwoDecoders) {
  // A decode step of 50 modelled s = 0.5 s keeps the first request on its D
  // while the second is placed.
  const std::string slow = "decode_base_seconds: 50\n";
  SimProcess p(
      Flags({"--compat", "vllm-ascend", "--role", "prefill", "--enable-prompt-tokens-details"}));
  SimProcess d1(Flags({"--compat", "vllm-ascend", "--role", "decode"}), slow);
  SimProcess d2(Flags({"--compat", "vllm-ascend", "--role", "decode"}), slow);
  ASSERT_TRUE(p.WaitHealthy());
  ASSERT_TRUE(d1.WaitHealthy());
  ASSERT_TRUE(d2.WaitHealthy());
  SimProcess router(Flags({"--compat", "vllm-ascend", "--role", "router", "--prefill-url", p.url(),
                           "--decode-url", d1.url(), "--decode-url", d2.url()}));
  ASSERT_TRUE(WaitProxyReady(router.port()));
  EXPECT_EQ(Get(router.port(), "/v1/models").status, 200);
  EXPECT_EQ(Get(router.port(), "/metrics").status, 404);
  std::vector<HttpResponse> responses(2);
  std::thread first(
      [&] { responses[0] = Post(router.port(), "/v1/completions", Body(kPrompt, 3, true)); });
  ASSERT_TRUE(WaitFor(
      [&] {
        return Metric(d1.port(), "vllm:num_requests_running") +
                   Metric(d2.port(), "vllm:num_requests_running") ==
               1;
      },
      absl::Seconds(5)));
  JsonValue health = MustParse(Get(router.port(), "/healthcheck").body);
  EXPECT_EQ(health.Find("request_num")->int_value(), 1);
  std::thread second(
      [&] { responses[1] = Post(router.port(), "/v1/completions", Body(kPrompt, 3, true)); });
  first.join();
  second.join();
  EXPECT_EQ(responses[0].headers["content-type"], "text/event-stream; charset=utf-8");
  // The proxy puts P's reported cached_tokens into the usage, 0 included.
  EXPECT_EQ(CachedTokens(UsageOf(responses[0], true)), 0);
  EXPECT_EQ(CachedTokens(UsageOf(responses[1], true)), 48);
  EXPECT_EQ(Metric(d1.port(), "vllm:request_success_total"), 1);
  EXPECT_EQ(Metric(d2.port(), "vllm:request_success_total"), 1);
  EXPECT_EQ(Metric(p.port(), "vllm:request_success_total"), 2);
}

TEST(SimCompatTest, VllmDecodeCountsARequestPullingKvAsWaiting) {
  // D's KV pull takes 100 modelled s = 1 s.
  SimProcess p(Flags({"--compat", "vllm", "--role", "prefill"}));
  SimProcess d(Flags({"--compat", "vllm", "--role", "decode"}),
               "kv_transfer_overhead_seconds: 100\n");
  ASSERT_TRUE(p.WaitHealthy());
  ASSERT_TRUE(d.WaitHealthy());
  SimProcess router(Flags(
      {"--compat", "vllm", "--role", "router", "--prefill-url", p.url(), "--decode-url", d.url()}));
  ASSERT_TRUE(WaitProxyReady(router.port()));
  std::thread client([&] { Post(router.port(), "/v1/completions", Body(kPrompt, 2, true)); });
  ASSERT_TRUE(WaitFor([&] { return Metric(d.port(), "vllm:num_requests_waiting") == 1; },
                      absl::Seconds(5)));
  EXPECT_EQ(Metric(d.port(), "vllm:num_requests_running"), 0);
  EXPECT_GT(Metric(d.port(), "vllm:kv_cache_usage_perc"), 0);
  client.join();
  EXPECT_EQ(Metric(d.port(), "vllm:num_requests_waiting"), 0);
  EXPECT_EQ(Metric(d.port(), "vllm:request_success_total"), 1);
}

TEST(SimCompatTest, LoadTagComesFromTheUserFieldWithoutTheHeader) {
  SimProcess sim(Flags({}));
  ASSERT_TRUE(sim.WaitHealthy());
  ASSERT_EQ(
      Post(sim.port(), "/v1/completions", Body("a b", 1, false, R"(,"user":"from-body")")).status,
      200);
  ASSERT_EQ(Post(sim.port(), "/v1/completions", Body("a b", 1, false, R"(,"user":"ignored")"),
                 {{"x-servelab-load", "from-header"}})
                .status,
            200);
  JsonValue loads = MustParse(Get(sim.port(), "/debug/loads").body);
  EXPECT_EQ(loads.Find("loads")->Find("from-body")->Find("completed")->int_value(), 1);
  EXPECT_EQ(loads.Find("loads")->Find("from-header")->Find("completed")->int_value(), 1);
  EXPECT_EQ(loads.Find("loads")->Find("ignored"), nullptr);
}

TEST(SimCompatTest, SimRouterTakesRepeatedUrlsRoundRobin) {
  SimProcess p(Flags({"--role", "prefill"}));
  SimProcess d1(Flags({"--role", "decode"}));
  SimProcess d2(Flags({"--role", "decode"}));
  ASSERT_TRUE(p.WaitHealthy());
  ASSERT_TRUE(d1.WaitHealthy());
  ASSERT_TRUE(d2.WaitHealthy());
  SimProcess router(Flags({"--role", "router", "--prefill-url", p.url(), "--decode-url", d1.url(),
                           "--decode-url", d2.url()}));
  ASSERT_TRUE(router.WaitHealthy());
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(Post(router.port(), "/v1/completions", Body("a b", 1, false)).status, 200);
  }
  EXPECT_EQ(Metric(d1.port(), "vllm:request_success_total"), 2);
  EXPECT_EQ(Metric(d2.port(), "vllm:request_success_total"), 2);
}

}  // namespace
}  // namespace servelab::sim
