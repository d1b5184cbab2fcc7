#include "daemon/core/spec/spec_delta.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "servelab/v1/spec.pb.h"
#include "tests/testing/status_matchers.h"

namespace servelab::core::spec {
namespace {

using servelab::testing::IsOk;
using servelab::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

TEST(SpecDeltaTest, SetsScalarsByType) {
  v1::ExperimentSpec spec;
  ASSERT_THAT(ApplySet(spec, "workload.concurrency=96"), IsOk());
  ASSERT_THAT(ApplySet(spec, "workload.request_rate=6.5"), IsOk());
  ASSERT_THAT(ApplySet(spec, "workload.dataset.seed=-3"), IsOk());
  ASSERT_THAT(ApplySet(spec, "scenario=128k-cache90"), IsOk());
  EXPECT_EQ(spec.workload().concurrency(), 96);
  EXPECT_DOUBLE_EQ(spec.workload().request_rate(), 6.5);
  EXPECT_EQ(spec.workload().dataset().seed(), -3);
  EXPECT_EQ(spec.scenario(), "128k-cache90");
}

TEST(SpecDeltaTest, EnumsByNameWithOrWithoutPrefix) {
  v1::ExperimentSpec spec;
  ASSERT_THAT(ApplySet(spec, "deployment.engine=vllm"), IsOk());
  EXPECT_EQ(spec.deployment().engine(), v1::ENGINE_VLLM);
  ASSERT_THAT(ApplySet(spec, "deployment.engine=ENGINE_SGLANG"), IsOk());
  EXPECT_EQ(spec.deployment().engine(), v1::ENGINE_SGLANG);
  ASSERT_THAT(ApplySet(spec, "workload.cache_prep=Seed"), IsOk());
  EXPECT_EQ(spec.workload().cache_prep(), v1::CACHE_PREP_SEED);
  EXPECT_THAT(ApplySet(spec, "deployment.engine=unspecified"),
              StatusIs(kInvalid, AllOf(HasSubstr("deployment.engine"),
                                       HasSubstr("one of: sim, vllm, sglang, command"))));
}

TEST(SpecDeltaTest, Durations) {
  v1::ExperimentSpec spec;
  ASSERT_THAT(ApplySet(spec, "limits.formal_deadline=30m"), IsOk());
  EXPECT_EQ(spec.limits().formal_deadline().seconds(), 1800);
  ASSERT_THAT(ApplySet(spec, "analysis.slo.tpot=50ms"), IsOk());
  EXPECT_EQ(spec.analysis().slo().tpot().nanos(), 50000000);
  ASSERT_THAT(ApplySet(spec, "limits.launch_timeout=1h30m"), IsOk());
  EXPECT_EQ(spec.limits().launch_timeout().seconds(), 5400);
  EXPECT_THAT(ApplySet(spec, "limits.formal_deadline=soon"),
              StatusIs(kInvalid, AllOf(HasSubstr("limits.formal_deadline"),
                                       HasSubstr("expected a duration"))));
}

TEST(SpecDeltaTest, RepeatedFields) {
  v1::ExperimentSpec spec;
  // Read afresh after each change: ApplySet copies the result back, and
  // protobuf's Clear() frees sub-messages, so a held reference would dangle
  // (ASan found one here).
  auto args = [&] { return spec.deployment().decode().extra_args(); };
  ASSERT_THAT(ApplySet(spec, "deployment.decode.extra_args+=--a"), IsOk());
  ASSERT_THAT(ApplySet(spec, "deployment.decode.extra_args+=--b"), IsOk());
  ASSERT_THAT(ApplySet(spec, "deployment.decode.extra_args+=--c"), IsOk());
  ASSERT_THAT(ApplySet(spec, "deployment.decode.extra_args[1]=--B"), IsOk());
  EXPECT_THAT(args(), ElementsAre("--a", "--B", "--c"));
  ASSERT_THAT(ApplyUnset(spec, "deployment.decode.extra_args[0]"), IsOk());
  EXPECT_THAT(args(), ElementsAre("--B", "--c"));
  EXPECT_THAT(ApplySet(spec, "deployment.decode.extra_args[5]=x"),
              StatusIs(kInvalid, HasSubstr("out of range")));
  ASSERT_THAT(ApplySet(spec, "deployment.decode.devices=[8, 9, 10]"), IsOk());
  EXPECT_THAT(spec.deployment().decode().devices(), ElementsAre(8, 9, 10));
  EXPECT_THAT(ApplySet(spec, "deployment.decode.devices=[8, x]"),
              StatusIs(kInvalid, AllOf(HasSubstr("deployment.decode.devices[1]"),
                                       HasSubstr("expected an integer"))));
  EXPECT_THAT(spec.deployment().decode().devices(), ElementsAre(8, 9, 10));
}

TEST(SpecDeltaTest, MapKeys) {
  v1::ExperimentSpec spec;
  ASSERT_THAT(ApplySet(spec, "labels.owner=me"), IsOk());
  ASSERT_THAT(ApplySet(spec, "labels.owner=you"), IsOk());
  ASSERT_THAT(ApplySet(spec, "deployment.decode.env.VLLM_LOG=debug=1"), IsOk());
  EXPECT_EQ(spec.labels().at("owner"), "you");
  EXPECT_EQ(spec.labels().size(), 1u);
  EXPECT_EQ(spec.deployment().decode().env().at("VLLM_LOG"), "debug=1");
  ASSERT_THAT(ApplyUnset(spec, "labels.owner"), IsOk());
  EXPECT_TRUE(spec.labels().empty());
}

TEST(SpecDeltaTest, FileRefFromPlainPath) {
  v1::ExperimentSpec spec;
  spec.mutable_deployment()->mutable_decode()->mutable_expert_layout()->set_sha256("old");
  ASSERT_THAT(ApplySet(spec, "deployment.decode.expert_layout=layouts/b.json"), IsOk());
  EXPECT_EQ(spec.deployment().decode().expert_layout().path(), "layouts/b.json");
  EXPECT_EQ(spec.deployment().decode().expert_layout().sha256(), "");
}

TEST(SpecDeltaTest, UnknownPathNamesTheNearestField) {
  v1::ExperimentSpec spec;
  EXPECT_THAT(ApplySet(spec, "workload.concurency=96"),
              StatusIs(kInvalid, HasSubstr("unknown field \"workload.concurency\" (did you mean "
                                           "\"workload.concurrency\"?)")));
  EXPECT_THAT(ApplySet(spec, "workload.zzzzzzzzzz=1"),
              StatusIs(kInvalid, AllOf(HasSubstr("workload.zzzzzzzzzz"),
                                       HasSubstr("num_requests, concurrency"))));
  EXPECT_THAT(ApplySet(spec, "deploymnet.engine=sim"),
              StatusIs(kInvalid, HasSubstr("did you mean \"deployment\"?")));
  EXPECT_THAT(ApplyUnset(spec, "workload.nope"), StatusIs(kInvalid, HasSubstr("workload.nope")));
}

TEST(SpecDeltaTest, WrongTypeNamesPathAndExpectedType) {
  v1::ExperimentSpec spec;
  spec.mutable_workload()->set_concurrency(64);
  EXPECT_THAT(ApplySet(spec, "workload.concurrency=lots"),
              StatusIs(kInvalid, AllOf(HasSubstr("workload.concurrency"),
                                       HasSubstr("expected an integer, got \"lots\""))));
  EXPECT_THAT(ApplySet(spec, "workload.concurrency=1.5"),
              StatusIs(kInvalid, HasSubstr("expected an integer")));
  EXPECT_THAT(ApplySet(spec, "workload.request_rate=fast"),
              StatusIs(kInvalid, HasSubstr("expected a number")));
  EXPECT_THAT(ApplySet(spec, "workload=3"), StatusIs(kInvalid, HasSubstr("set one of them")));
  EXPECT_THAT(ApplySet(spec, "workload.concurrency"), StatusIs(kInvalid, HasSubstr("PATH=VALUE")));
  EXPECT_THAT(ApplySet(spec, "workload.concurrency+=1"), StatusIs(kInvalid, HasSubstr("list")));
  EXPECT_EQ(spec.workload().concurrency(), 64);
}

TEST(SpecDeltaTest, StructuredMessageValue) {
  v1::ExperimentSpec spec;
  ASSERT_THAT(ApplySet(spec, "analysis.slo={ttft: 2s, tpot: 40ms}"), IsOk());
  EXPECT_EQ(spec.analysis().slo().ttft().seconds(), 2);
  EXPECT_EQ(spec.analysis().slo().tpot().nanos(), 40000000);
}

}  // namespace
}  // namespace servelab::core::spec
