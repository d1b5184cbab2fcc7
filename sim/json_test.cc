#include "sim/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/status_matchers.h"

namespace servelab::sim {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

TEST(JsonTest, ParsesNestedValues) {
  absl::StatusOr<JsonValue> v =
      ParseJson(R"({"a": [1, 2.5, "x\n\u00e9"], "b": {"c": true, "d": null}, "e": -3e2})");
  ASSERT_THAT(v, IsOk());
  const JsonValue* a = v->Find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items().size(), 3u);
  EXPECT_TRUE(a->items()[0].is_integer());
  EXPECT_EQ(a->items()[0].int_value(), 1);
  EXPECT_FALSE(a->items()[1].is_integer());
  EXPECT_EQ(a->items()[2].string_value(), "x\n\xc3\xa9");
  EXPECT_TRUE(v->Find("b")->Find("c")->bool_value());
  EXPECT_TRUE(v->Find("b")->Find("d")->is_null());
  EXPECT_EQ(v->Find("e")->number(), -300);
  EXPECT_EQ(v->Find("missing"), nullptr);
}

TEST(JsonTest, RejectsMalformedInput) {
  for (const char* bad :
       {"", "{", "{\"a\":}", "[1,]", "{\"a\" 1}", "tru", "\"abc", "01x", "{} extra", "[1 2]"}) {
    EXPECT_THAT(ParseJson(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("malformed")))
        << bad;
  }
}

TEST(JsonTest, RoundTripsThroughToJson) {
  absl::StatusOr<JsonValue> v = ParseJson(R"({"p":[1,2],"s":"q\"","f":0.5,"n":null})");
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(ToJson(*v), R"({"p":[1,2],"s":"q\"","f":0.5,"n":null})");
  JsonValue one = JsonValue::Number(1, true);
  v->Set("p", &one);
  v->Set("n", nullptr);
  EXPECT_EQ(ToJson(*v), R"({"s":"q\"","f":0.5,"p":1})");
}

TEST(JsonTest, RejectsTextThatIsNotUtf8AndLoneSurrogates) {
  EXPECT_THAT(ParseJson("{\"p\":\"a\xff\"}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte 7: not UTF-8")));
  for (const char* bad :
       {R"(["\ud800"])", R"(["\udc00"])", R"(["\ud800\u0041"])", R"(["\ud800x"])"}) {
    EXPECT_THAT(ParseJson(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lone surrogate")))
        << bad;
  }
  absl::StatusOr<JsonValue> pair = ParseJson(R"(["\ud83d\ude00", "\u00e9"])");
  ASSERT_THAT(pair, IsOk());
  EXPECT_EQ(pair->items()[0].string_value(), "\xf0\x9f\x98\x80");
  EXPECT_EQ(pair->items()[1].string_value(), "\xc3\xa9");
}

TEST(JsonTest, IntegerBeyondInt64IsAPlainNumber) {
  absl::StatusOr<JsonValue> v =
      ParseJson("[9223372036854775807, -9223372036854775808, 99999999999999999999999]");
  ASSERT_THAT(v, IsOk());
  // 2^63 - 1 rounds to 2^63 as a double, just out of range.
  EXPECT_FALSE(v->items()[0].is_integer());
  EXPECT_TRUE(v->items()[1].is_integer());
  EXPECT_EQ(v->items()[1].int_value(), INT64_MIN);
  EXPECT_FALSE(v->items()[2].is_integer());
  EXPECT_TRUE(v->items()[2].is_number());
  EXPECT_EQ(v->items()[2].number(), 1e23);
  EXPECT_EQ(ToJson(*v), "[9.2233720368547758e+18,-9223372036854775808,9.9999999999999992e+22]");
}

TEST(JsonTest, IntegralDoubleKeepsItsFraction) {
  absl::StatusOr<JsonValue> v = ParseJson("[100.0, 1e2, -0.0, 7]");
  ASSERT_THAT(v, IsOk());
  const std::string text = ToJson(*v);
  EXPECT_EQ(text, "[100.0,100.0,-0.0,7]");
  absl::StatusOr<JsonValue> again = ParseJson(text);
  ASSERT_THAT(again, IsOk());
  EXPECT_FALSE(again->items()[0].is_integer());
  EXPECT_FALSE(again->items()[1].is_integer());
  EXPECT_FALSE(again->items()[2].is_integer());
  EXPECT_TRUE(again->items()[3].is_integer());
  EXPECT_EQ(ToJson(*again), text);
}

TEST(JsonTest, RejectsDeepNesting) {
  EXPECT_FALSE(ParseJson(std::string(100, '[') + std::string(100, ']')).ok());
}

// ParseJson reads with simdjson and leaves the rest to the hand-written
// reader; either way the answer, or the error, is the hand-written one's.
TEST(JsonTest, ParseJsonAgreesWithTheHandWrittenReader) {
  const std::vector<std::string> texts = {
      R"({"prompt":[1,2,3],"max_tokens":16,"stream":true,"user":"exp-1/formal/1"})",
      R"( { "a" : [ ] , "b" : { } , "c" : null , "d" : false } )",
      R"({"k":1,"k":2})",  // duplicate key: the last wins
      R"([9223372036854775807,-9223372036854775808,9223372036854775808])",
      R"([18446744073709551615,99999999999999991611392,-0,0.5,1e2,1E-2])",
      R"(["\u00e9\ud83d\ude00","\n\t\"\\\/"])",  // escapes and a surrogate pair
      R"(["\ud800"])",
      R"(["\udc00x"])",                             // lone surrogates: refused
      "{\"p\":\"a\xff\"}",                          // not UTF-8: refused
      std::string(64, '[') + std::string(64, ']'),  // as deep as allowed
      std::string(65, '[') + std::string(65, ']'),  // one too deep: refused
      R"({"a":1,})",
      R"([1 2])",
      R"({"a" 1})",
      "",
      "   ",
      "01",
      "1e400",
      R"("x)",
      "[1]x"};
  for (const std::string& text : texts) {
    absl::StatusOr<JsonValue> fast = ParseJson(text);
    absl::StatusOr<JsonValue> by_hand = ParseJsonByHand(text);
    ASSERT_EQ(fast.ok(), by_hand.ok()) << text;
    if (fast.ok()) {
      EXPECT_EQ(ToJson(*fast), ToJson(*by_hand)) << text;
    } else {
      EXPECT_EQ(fast.status(), by_hand.status()) << text;
    }
  }
}

}  // namespace
}  // namespace servelab::sim
