#include "loadgen/sse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace servelab::loadgen {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SseParserTest, SplitsEventsAcrossArbitraryReads) {
  std::string stream =
      "data: {\"a\":1}\n\n: comment\n\ndata: {\"b\":2}\r\n\r\nevent: x\ndata: one\ndata: two\n\n"
      "data: [DONE]\n\n";
  // Every split point gives the same events.
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SseParser p;
    std::vector<std::string> events;
    auto on = [&](absl::string_view d) { events.emplace_back(d); };
    p.Feed(absl::string_view(stream).substr(0, cut), on);
    p.Feed(absl::string_view(stream).substr(cut), on);
    EXPECT_THAT(events, ElementsAre("{\"a\":1}", "{\"b\":2}", "one\ntwo", "[DONE]")) << cut;
  }
}

TEST(ParseStreamChunkTest, CompletionTokenChunk) {
  StreamChunk c = ParseStreamChunk(
      R"({"id":"x","object":"text_completion","choices":[{"index":0,"text":" w1","logprobs":null,"finish_reason":null}],"usage":null})",
      v1::API_COMPLETIONS);
  EXPECT_TRUE(c.has_tokens);
  EXPECT_FALSE(c.has_usage);
  EXPECT_EQ(c.error, "");
}

TEST(ParseStreamChunkTest, UsageChunk) {
  StreamChunk c = ParseStreamChunk(
      R"({"id":"x","choices":[],"usage":{"prompt_tokens":131072,"total_tokens":132096,"completion_tokens":1024,"prompt_tokens_details":{"cached_tokens":117968}}})",
      v1::API_COMPLETIONS);
  EXPECT_FALSE(c.has_tokens);
  EXPECT_TRUE(c.has_usage);
  EXPECT_EQ(c.prompt_tokens, 131072);
  EXPECT_EQ(c.completion_tokens, 1024);
  EXPECT_EQ(c.cached_tokens, 117968);
}

// SGLang /generate chunks carry running totals in meta_info.
TEST(ParseStreamChunkTest, GenerateChunkCountsAreCumulative) {
  StreamChunk c = ParseStreamChunk(
      R"({"text":" w0 w1","output_ids":[5,6],"meta_info":{"id":"t#1","finish_reason":null,)"
      R"("prompt_tokens":64,"completion_tokens":2,"cached_tokens":48,"e2e_latency":0.1}})",
      v1::API_GENERATE);
  EXPECT_TRUE(c.has_usage);
  EXPECT_TRUE(c.counts_are_cumulative);
  EXPECT_FALSE(c.has_tokens);
  EXPECT_EQ(c.prompt_tokens, 64);
  EXPECT_EQ(c.completion_tokens, 2);
  EXPECT_EQ(c.cached_tokens, 48);
  EXPECT_EQ(c.error, "");
  // An error inside the stream (http_server.py stream_results).
  EXPECT_EQ(ParseStreamChunk(R"({"error":{"message":"boom"}})", v1::API_GENERATE).error, "boom");
  // The same chunk read as a completion is no usage.
  EXPECT_FALSE(
      ParseStreamChunk(R"({"meta_info":{"completion_tokens":2}})", v1::API_COMPLETIONS).has_usage);
}

TEST(ParseStreamChunkTest, ChatRoleChunkIsNotAToken) {
  EXPECT_FALSE(
      ParseStreamChunk(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})",
                       v1::API_CHAT_COMPLETIONS)
          .has_tokens);
  EXPECT_TRUE(ParseStreamChunk(R"({"choices":[{"index":0,"delta":{"content":" w\"}{"}}]})",
                               v1::API_CHAT_COMPLETIONS)
                  .has_tokens);
}

TEST(ParseStreamChunkTest, EscapedKeysInsideTextAreNotFields) {
  StreamChunk c = ParseStreamChunk(R"({"choices":[{"text":"\"usage\":{\"prompt_tokens\":9}"}]})",
                                   v1::API_COMPLETIONS);
  EXPECT_TRUE(c.has_tokens);
  EXPECT_FALSE(c.has_usage);
}

TEST(ParseStreamChunkTest, DoneErrorAndMalformed) {
  EXPECT_TRUE(ParseStreamChunk("[DONE]", v1::API_COMPLETIONS).done);
  EXPECT_EQ(
      ParseStreamChunk(R"({"error":{"message":"overloaded","code":503}})", v1::API_COMPLETIONS)
          .error,
      "overloaded");
  EXPECT_THAT(ParseStreamChunk(R"({"choices":[{"text":)", v1::API_COMPLETIONS).error,
              HasSubstr("malformed"));
}

// What a server may send oddly is read leniently (a float count, a null
// usage, a bare error string); what is not JSON at all fails the request,
// even where the chunk holds nothing the load generator reads.
TEST(ParseStreamChunkTest, OddFieldsAreReadAndBrokenJsonAnywhereIsMalformed) {
  StreamChunk c =
      ParseStreamChunk(R"({"choices":[],"usage":{"prompt_tokens":12.7,"completion_tokens":null}})",
                       v1::API_COMPLETIONS);
  EXPECT_TRUE(c.has_usage);
  EXPECT_EQ(c.prompt_tokens, 12);
  EXPECT_EQ(c.completion_tokens, 0);
  EXPECT_EQ(c.cached_tokens, -1);
  EXPECT_FALSE(ParseStreamChunk(R"({"usage":null})", v1::API_COMPLETIONS).has_usage);
  // Found by fuzz/: a count past int32 (as a float, casting it is undefined).
  c = ParseStreamChunk(R"({"usage":{"prompt_tokens":1e300,"completion_tokens":4294967296}})",
                       v1::API_COMPLETIONS);
  EXPECT_EQ(c.prompt_tokens, 0);
  EXPECT_EQ(c.completion_tokens, 0);
  EXPECT_EQ(ParseStreamChunk(R"({"error":"busy \"now\""})", v1::API_COMPLETIONS).error,
            "busy \"now\"");
  EXPECT_EQ(ParseStreamChunk(R"({"error":{"code":500}})", v1::API_COMPLETIONS).error,
            "error chunk without a message");
  EXPECT_THAT(ParseStreamChunk(R"({"id":x,"choices":[{"text":"a"}]})", v1::API_COMPLETIONS).error,
              HasSubstr("malformed"));
  EXPECT_THAT(ParseStreamChunk(R"([1,2])", v1::API_COMPLETIONS).error, HasSubstr("malformed"));
}

}  // namespace
}  // namespace servelab::loadgen
