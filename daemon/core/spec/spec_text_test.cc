#include "daemon/core/spec/spec_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "daemon/core/spec/canonical.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"

namespace servelab::core::spec {
namespace {

using servelab::testing::IsOk;
using servelab::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

TEST(SpecTextTest, YamlAndJsonGiveTheSameSpec) {
  absl::StatusOr<v1::ExperimentSpec> yaml = ParseSpecText(R"(
scenario: s
workload:
  concurrency: 96
  arrival: gamma
  dataset: {input_tokens: 1024, output_tokens: 64}
limits:
  formal_deadline: 30m
labels: {owner: me}
)",
                                                          "a.yaml");
  absl::StatusOr<v1::ExperimentSpec> json = ParseSpecText(
      R"({"labels": {"owner": "me"}, "limits": {"formal_deadline": "1800s"},
          "workload": {"dataset": {"output_tokens": 64, "input_tokens": 1024},
                       "arrival": "ARRIVAL_GAMMA", "concurrency": 96}, "scenario": "s"})",
      "a.json");
  ASSERT_THAT(yaml, IsOk());
  ASSERT_THAT(json, IsOk());
  EXPECT_EQ(yaml->workload().concurrency(), 96);
  EXPECT_EQ(yaml->workload().arrival(), v1::ARRIVAL_GAMMA);
  EXPECT_EQ(CanonicalJson(*yaml), CanonicalJson(*json));
}

TEST(SpecTextTest, ExamplesParse) {
  for (const char* name : {"16k-nocache.yaml", "128k-cache90.yaml"}) {
    std::string text = servelab::testing::ReadFile(
        servelab::testing::SourcePath(std::string("deploy/examples/") + name));
    ASSERT_FALSE(text.empty()) << name;
    EXPECT_THAT(ParseSpecText(text, name), IsOk()) << name;
  }
}

TEST(SpecTextTest, UnknownNestedFieldNamesPathAndSuggestion) {
  EXPECT_THAT(ParseSpecText("workload:\n  concurency: 96\n", "x.yaml"),
              StatusIs(kInvalid, AllOf(HasSubstr("x.yaml"), HasSubstr("workload.concurency"),
                                       HasSubstr("did you mean \"workload.concurrency\""))));
}

TEST(SpecTextTest, WrongTypeNamesPathAndExpectedType) {
  EXPECT_THAT(ParseSpecText("workload:\n  num_requests: many\n", "x.yaml"),
              StatusIs(kInvalid, AllOf(HasSubstr("workload.num_requests"),
                                       HasSubstr("expected an integer"))));
  EXPECT_THAT(ParseSpecText("workload: 5\n", "x.yaml"),
              StatusIs(kInvalid, HasSubstr("workload: expected a mapping")));
  EXPECT_THAT(ParseSpecText("deployment:\n  decode:\n    devices: 3\n", "x.yaml"),
              StatusIs(kInvalid, HasSubstr("deployment.decode.devices: expected a list")));
}

TEST(SpecTextTest, MalformedYamlNamesSourceAndLine) {
  EXPECT_THAT(ParseSpecText("scenario: s\nworkload: {concurrency: [1\n", "bad.yaml"),
              StatusIs(kInvalid, AllOf(HasSubstr("bad.yaml:"), HasSubstr("malformed YAML"))));
  EXPECT_THAT(ParseSpecText("", "empty.yaml"), StatusIs(kInvalid, HasSubstr("empty")));
  EXPECT_THAT(ParseSpecText("- a\n- b\n", "list.yaml"),
              StatusIs(kInvalid, HasSubstr("expected a mapping")));
}

}  // namespace
}  // namespace servelab::core::spec
