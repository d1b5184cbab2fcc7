#include "loadgen/request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace servelab::loadgen {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(EndpointTest, Parses) {
  auto ep = ParseEndpoint("http://127.0.0.1:8000/proxy/");
  ASSERT_THAT(ep, IsOk());
  EXPECT_EQ(ep->host, "127.0.0.1");
  EXPECT_EQ(ep->port, "8000");
  EXPECT_EQ(ep->base_path, "/proxy");
  EXPECT_EQ(RequestPath(*ep, v1::API_CHAT_COMPLETIONS), "/proxy/v1/chat/completions");
  EXPECT_EQ(ParseEndpoint("http://localhost")->port, "80");
  EXPECT_THAT(ParseEndpoint("https://a:1"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("https")));
  EXPECT_THAT(ParseEndpoint("127.0.0.1:80"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("http://")));
  EXPECT_THAT(ParseEndpoint("http://a:99999"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("port")));
}

TEST(RenderTest, CompletionsBodyAsksForExactOutputWithoutMinTokens) {
  Prompt p;
  p.token_ids = {101, 102};
  p.output_tokens = 3;
  EXPECT_EQ(RenderBody(v1::API_COMPLETIONS, "m", p),
            R"({"model":"m","prompt":[101,102],"max_tokens":3,"ignore_eos":true,)"
            R"("stream":true,"stream_options":{"include_usage":true}})");
}

TEST(RenderTest, ChatBodyHasOneWordPerToken) {
  Prompt p;
  p.token_ids = {5, 6};
  p.output_tokens = 1;
  EXPECT_THAT(RenderBody(v1::API_CHAT_COMPLETIONS, "m", p),
              HasSubstr(R"("messages":[{"role":"user","content":"t5 t6"}])"));
  Prompt text;
  text.text = "say \"hi\"\n";
  text.output_tokens = 1;
  EXPECT_THAT(RenderBody(v1::API_COMPLETIONS, "m", text), HasSubstr(R"("prompt":"say \"hi\"\n")"));
}

// SGLang's /generate: token ids as input_ids, the length in sampling_params,
// the load tag in rid (sgl-router keeps no other free field), no model.
TEST(RenderTest, GenerateBodyIsSglangsNativeShape) {
  Endpoint ep = *ParseEndpoint("http://h:1/base");
  Prompt p;
  p.token_ids = {101, 102};
  p.output_tokens = 3;
  EXPECT_EQ(RenderBody(v1::API_GENERATE, "m", p, "exp-1/formal/1", "exp-1/4/1/7"),
            R"({"input_ids":[101,102],"sampling_params":{"max_new_tokens":3,"ignore_eos":true},)"
            R"("stream":true,"rid":"exp-1/formal/1#exp-1/4/1/7"})");
  EXPECT_EQ(RequestPath(ep, v1::API_GENERATE), "/base/generate");
  Prompt text;
  text.text = "hello";
  text.output_tokens = 2;
  EXPECT_EQ(RenderBody(v1::API_GENERATE, "m", text),
            R"({"text":"hello","sampling_params":{"max_new_tokens":2,"ignore_eos":true},)"
            R"("stream":true})");
  EXPECT_THAT(RenderHttpRequest(ep, v1::API_GENERATE, "m", p, "t", "id-1"),
              HasSubstr(R"("rid":"t#id-1")"));
}

TEST(RenderTest, HttpRequestHasHeadersAndLength) {
  Endpoint ep = *ParseEndpoint("http://h:1");
  Prompt p;
  p.token_ids = {1};
  p.output_tokens = 1;
  std::string body = RenderBody(v1::API_COMPLETIONS, "m", p, "tag-1");
  std::string wire = RenderHttpRequest(ep, v1::API_COMPLETIONS, "m", p, "tag-1");
  // The tag also travels in the body, which proxies forward.
  EXPECT_THAT(body, HasSubstr(R"("user":"tag-1")"));
  EXPECT_THAT(wire, StartsWith("POST /v1/completions HTTP/1.1\r\nHost: h:1\r\n"));
  EXPECT_THAT(wire, HasSubstr("x-servelab-load: tag-1\r\n"));
  EXPECT_THAT(wire,
              HasSubstr("Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
  EXPECT_THAT(RenderHttpRequest(ep, v1::API_COMPLETIONS, "m", p, ""),
              ::testing::Not(HasSubstr("x-servelab-load")));
  EXPECT_THAT(RenderHttpRequest(ep, v1::API_COMPLETIONS, "m", p, ""),
              ::testing::Not(HasSubstr("\"user\"")));
}

}  // namespace
}  // namespace servelab::loadgen
