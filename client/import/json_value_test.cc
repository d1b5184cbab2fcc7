#include "client/import/json_value.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/testing/status_matchers.h"

namespace servelab::client::import {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

TEST(JsonValueTest, ParsesNestedValuesInOrder) {
  absl::StatusOr<JsonValue> v =
      ParseJson(R"( {"b": [1, 2.5e-3, -4], "a": {"x": null, "y": true}, "s": "q\"\\\n"} )");
  ASSERT_THAT(v, IsOk());
  ASSERT_TRUE(v->is_object());
  EXPECT_EQ(v->object()[0].key, "b");
  const std::vector<JsonValue>& b = v->Find("b")->array();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[1].number(), 2.5e-3);
  EXPECT_EQ(b[2].number(), -4);
  EXPECT_TRUE(v->Find("a")->Find("x")->is_null());
  EXPECT_TRUE(v->Find("a")->Find("y")->boolean());
  EXPECT_EQ(v->Find("s")->string(), "q\"\\\n");
  EXPECT_EQ(v->Find("missing"), nullptr);
  EXPECT_EQ(b[0].Find("x"), nullptr);  // Not an object.
}

TEST(JsonValueTest, DecodesUnicodeEscapesAsJsonDumpWritesThem) {
  // json.dump's ensure_ascii: "é" as \u00e9, "😀" as a surrogate pair.
  absl::StatusOr<JsonValue> v = ParseJson(R"("caf\u00e9 \ud83d\ude00 \ud800")");
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(v->string(), "caf\xC3\xA9 \xF0\x9F\x98\x80 \xEF\xBF\xBD");
}

TEST(JsonValueTest, AcceptsPythonNonFiniteTokens) {
  absl::StatusOr<JsonValue> v = ParseJson("[NaN, Infinity, -Infinity]");
  ASSERT_THAT(v, IsOk());
  EXPECT_TRUE(std::isnan(v->array()[0].number()));
  EXPECT_EQ(v->array()[1].number(), INFINITY);
  EXPECT_EQ(v->array()[2].number(), -INFINITY);
}

TEST(JsonValueTest, ErrorsNameLineAndColumn) {
  EXPECT_THAT(ParseJson("{\"a\": 1,\n \"b\": }"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 2, column 7: expected a value")));
  EXPECT_THAT(ParseJson("[1, 2"), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("line 1, column 6: unexpected end of the "
                                                     "text inside a list")));
  EXPECT_THAT(ParseJson("{\"a\" 1}"), StatusIs(absl::StatusCode::kInvalidArgument,
                                               HasSubstr("column 6: expected ':' after the key")));
  EXPECT_THAT(ParseJson("[1] x"), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("expected the end of the text")));
  EXPECT_THAT(ParseJson("[1.2.3]"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("malformed number")));
  EXPECT_THAT(ParseJson(""), StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr("unexpected end of the text")));
  EXPECT_THAT(ParseJson("{}\n[", 7),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 8, column 1")));
}

TEST(JsonValueTest, RejectsDeepNesting) {
  std::string deep(100, '[');
  EXPECT_THAT(ParseJson(deep), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("nesting deeper than 64 levels")));
}

}  // namespace
}  // namespace servelab::client::import
