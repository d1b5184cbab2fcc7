#include "daemon/engines/spec_template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace servelab::engines {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

v1::ExperimentSpec Spec() {
  v1::ExperimentSpec spec;
  spec.set_scenario("16k");
  spec.mutable_deployment()->set_engine(v1::ENGINE_COMMAND);
  spec.mutable_deployment()->mutable_decode()->set_model("m");
  spec.mutable_deployment()->mutable_decode()->add_devices(4);
  spec.mutable_deployment()->mutable_decode()->add_devices(5);
  spec.mutable_deployment()->mutable_decode()->add_extra_args("--x");
  spec.mutable_workload()->set_request_rate(0.1234567);
  spec.mutable_limits()->mutable_formal_deadline()->set_seconds(90);
  (*spec.mutable_labels())["owner"] = "ana";
  return spec;
}

TEST(SpecTemplateTest, ScalarsListsMapsEnumsDurations) {
  v1::ExperimentSpec spec = Spec();
  EXPECT_EQ(*SpecFieldText(spec, "deployment.decode.model"), "m");
  EXPECT_EQ(*SpecFieldText(spec, "deployment.decode.devices"), "4,5");
  EXPECT_EQ(*SpecFieldText(spec, "deployment.decode.devices[1]"), "5");
  EXPECT_EQ(*SpecFieldText(spec, "deployment.decode.extra_args[0]"), "--x");
  EXPECT_EQ(*SpecFieldText(spec, "deployment.engine"), "ENGINE_COMMAND");
  EXPECT_EQ(*SpecFieldText(spec, "workload.request_rate"), "0.1234567");
  EXPECT_EQ(*SpecFieldText(spec, "workload.concurrency"), "0");
  EXPECT_EQ(*SpecFieldText(spec, "limits.formal_deadline"), "1m30s");
  EXPECT_EQ(*SpecFieldText(spec, "labels.owner"), "ana");
}

TEST(SpecTemplateTest, Errors) {
  v1::ExperimentSpec spec = Spec();
  EXPECT_THAT(SpecFieldText(spec, "deployment.decode.modle"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("did you mean")));
  EXPECT_THAT(SpecFieldText(spec, "deployment.decode"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a message")));
  EXPECT_THAT(SpecFieldText(spec, "deployment.decode.devices[5]"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("index 5")));
  EXPECT_THAT(SpecFieldText(spec, "labels.nobody"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no key")));
  EXPECT_THAT(SpecFieldText(spec, "labels"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name a key")));
}

TEST(SpecTemplateTest, ExpandsVariablesAndBraces) {
  v1::ExperimentSpec spec = Spec();
  core::Endpoints endpoints{8100, 0, 0};
  auto vars = TemplateVariables(spec, v1::SIDE_DECODE, 8200, endpoints, "/logs");
  EXPECT_EQ(*ExpandTemplate("{port}:{prefill_url}:{side}:{{x}}", spec, vars, "t"),
            "8200:http://127.0.0.1:8100:decode:{x}");
  EXPECT_EQ(*ExpandTemplate("--m={deployment.decode.model}", spec, vars, "t"), "--m=m");
  EXPECT_THAT(ExpandTemplate("{router_url}", spec, vars, "argv[3]"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("argv[3]: placeholder {router_url} is not known")));
  EXPECT_THAT(ExpandTemplate("{nope}", spec, vars, "argv[1]"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("{nope}")));
  EXPECT_THAT(ExpandTemplate("{port", spec, vars, "t"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unterminated")));
  EXPECT_THAT(ExpandTemplate("a}b", spec, vars, "t"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unmatched")));
}

}  // namespace
}  // namespace servelab::engines
