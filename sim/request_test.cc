#include "sim/request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/tokens.h"
#include "tests/testing/status_matchers.h"

namespace servelab::sim {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

absl::StatusOr<GenerationRequest> Parse(const std::string& json,
                                        ApiKind kind = ApiKind::kCompletion) {
  SimConfig config;
  config.max_model_len = 100;
  absl::StatusOr<JsonValue> v = ParseJson(json);
  if (!v.ok()) return v.status();
  return ParseGenerationRequest(*v, kind, config);
}

TEST(RequestTest, ReadsUserAndTheRemoteDecodeMarks) {
  absl::StatusOr<GenerationRequest> r =
      Parse(R"({"prompt": "a", "user": "tag-1", "kv_transfer_params": {"do_remote_decode": true,
                "remote_engine_id": null}})");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->user, "tag-1");
  EXPECT_TRUE(r->remote_decode);
  EXPECT_FALSE(r->kv_transferred);
  r = Parse(R"({"prompt": "a", "user": 7, "bootstrap_room": 12})");  // a non-string user is ignored
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->user, "");
  EXPECT_TRUE(r->remote_decode);
}

TEST(RequestTest, TextPromptIsOneTokenPerWord) {
  absl::StatusOr<GenerationRequest> r =
      Parse(R"({"prompt": "  the quick\tbrown\nfox ", "max_tokens": 5})");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->prompt_tokens.size(), 4u);
  EXPECT_EQ(r->max_tokens, 5);
  EXPECT_EQ(TokenizeText("the quick"), TokenizeText("the   quick"));
}

TEST(RequestTest, TokenIdPromptAndStreamOptions) {
  absl::StatusOr<GenerationRequest> r = Parse(
      R"({"prompt": [1, 2, 3], "max_tokens": 7, "min_tokens": 7, "ignore_eos": true,
          "stream": true, "stream_options": {"include_usage": true}})");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->prompt_tokens, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(r->min_tokens, 7);
  EXPECT_TRUE(r->ignore_eos && r->stream && r->include_usage);
  EXPECT_FALSE(r->kv_transferred);
}

TEST(RequestTest, ChatCountsWordsOfAllMessages) {
  absl::StatusOr<GenerationRequest> r =
      Parse(R"({"messages": [{"role": "system", "content": "be brief"},
                             {"role": "user", "content": [{"type": "text", "text": "hi there you"}]}],
                "max_tokens": 3})",
            ApiKind::kChat);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->prompt_tokens.size(), 5u);
}

TEST(RequestTest, KvTransferParams) {
  absl::StatusOr<GenerationRequest> r = Parse(
      R"({"prompt": "a b", "kv_transfer_params": {"do_remote_prefill": true, "remote_cached_tokens": 16}})");
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->kv_transferred);
  EXPECT_EQ(r->remote_cached_tokens, 16);
}

TEST(RequestTest, BadInputs) {
  using absl::StatusCode;
  EXPECT_THAT(Parse(R"({"max_tokens": 5})"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("prompt")));
  EXPECT_THAT(Parse(R"({"prompt": "a", "max_tokens": 0})"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("max_tokens")));
  EXPECT_THAT(Parse(R"({"prompt": "a", "max_tokens": "5"})"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("max_tokens")));
  EXPECT_THAT(Parse(R"({"prompt": ""})"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT(Parse(R"({"prompt": [1, -2]})"),
              StatusIs(StatusCode::kInvalidArgument, ::testing::_));
  std::string long_prompt = "{\"prompt\": \"";
  for (int i = 0; i < 101; ++i) long_prompt += "w ";
  long_prompt += "\"}";
  EXPECT_THAT(Parse(long_prompt),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("context length")));
  EXPECT_THAT(Parse(R"({"prompt": "a", "max_tokens": 100})"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("context length")));
  EXPECT_THAT(Parse(R"({"prompt": "a", "max_tokens": 3, "min_tokens": 4})"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("min_tokens")));
  EXPECT_THAT(Parse(R"({"prompt": "a", "model": "other"})"),
              StatusIs(StatusCode::kNotFound, HasSubstr("other")));
  EXPECT_THAT(Parse(R"({"messages": []})", ApiKind::kChat),
              StatusIs(StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(Parse(R"([1])"), StatusIs(StatusCode::kInvalidArgument, ::testing::_));
}

TEST(RequestTest, HttpStatusMapping) {
  EXPECT_EQ(HttpStatusFor(absl::InvalidArgumentError("x")), 400);
  EXPECT_EQ(HttpStatusFor(absl::NotFoundError("x")), 404);
  EXPECT_THAT(ErrorBody(400, "bad \"x\""), HasSubstr(R"("message":"bad \"x\"")"));
}

}  // namespace
}  // namespace servelab::sim
