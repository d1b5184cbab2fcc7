#include "daemon/core/spec/scope.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "daemon/core/spec/field_path.h"
#include "daemon/core/spec/spec_delta.h"
#include "tests/testing/status_matchers.h"

namespace servelab::core::spec {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using servelab::testing::IsOk;

bool IsStruct(const FieldDescriptor& f) {
  return f.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !f.is_map() &&
         !IsValueMessage(*f.message_type());
}

// Visits every field reachable from `d` with its path and effective scope.
void Walk(const Descriptor& d, const std::string& prefix, v1::Scope holder,
          const std::function<void(const FieldDescriptor&, const std::string&, v1::Scope)>& fn) {
  for (int i = 0; i < d.field_count(); ++i) {
    const FieldDescriptor& f = *d.field(i);
    std::string path = prefix.empty() ? f.name() : prefix + "." + f.name();
    v1::Scope scope = EffectiveScope(f, holder);
    fn(f, path, scope);
    if (IsStruct(f)) Walk(*f.message_type(), path, scope, fn);
  }
}

TEST(ScopeTest, EveryFieldDeclaresWhatItInvalidates) {
  int fields = 0;
  Walk(*v1::ExperimentSpec::descriptor(), "", v1::SCOPE_UNSPECIFIED,
       [&](const FieldDescriptor& f, const std::string& path, v1::Scope) {
         ++fields;
         EXPECT_NE(DeclaredScope(f), v1::SCOPE_UNSPECIFIED)
             << path << " has no (servelab.v1.scope) option";
       });
  EXPECT_GT(fields, 50);
}

TEST(ScopeTest, EveryLeafResolvesToAConcreteScope) {
  Walk(*v1::ExperimentSpec::descriptor(), "", v1::SCOPE_UNSPECIFIED,
       [&](const FieldDescriptor& f, const std::string& path, v1::Scope scope) {
         if (DeclaredScope(f) == v1::SCOPE_OF_FIELDS) {
           EXPECT_TRUE(IsStruct(f)) << path << ": SCOPE_OF_FIELDS is only for message fields";
           return;
         }
         if (IsStruct(f) && DeclaredScope(f) != v1::SCOPE_OF_HOLDER) return;
         EXPECT_NE(scope, v1::SCOPE_UNSPECIFIED) << path << " inherits no scope from its holder";
         EXPECT_NE(scope, v1::SCOPE_OF_FIELDS) << path;
         EXPECT_NE(scope, v1::SCOPE_OF_HOLDER) << path;
       });
}

v1::Scope ScopeOf(const std::string& path) {
  v1::Scope result = v1::SCOPE_UNSPECIFIED;
  Walk(*v1::ExperimentSpec::descriptor(), "", v1::SCOPE_UNSPECIFIED,
       [&](const FieldDescriptor&, const std::string& p, v1::Scope scope) {
         if (p == path) result = scope;
       });
  return result;
}

TEST(ScopeTest, SharedMessagesTakeTheScopeOfTheirHolder) {
  EXPECT_EQ(ScopeOf("deployment.decode.model"), v1::SCOPE_DECODE);
  EXPECT_EQ(ScopeOf("deployment.prefill.model"), v1::SCOPE_PREFILL);
  EXPECT_EQ(ScopeOf("deployment.decode.expert_layout.sha256"), v1::SCOPE_DECODE);
  EXPECT_EQ(ScopeOf("workload.dataset.file.path"), v1::SCOPE_CACHE);
  EXPECT_EQ(ScopeOf("workload.concurrency"), v1::SCOPE_LOAD);
  EXPECT_EQ(ScopeOf("limits.formal_deadline"), v1::SCOPE_NOTHING);
  EXPECT_EQ(ScopeOf("analysis.slo.ttft"), v1::SCOPE_ANALYSIS);
  EXPECT_EQ(ScopeOf("deployment.engine"), v1::SCOPE_DEPLOYMENT);
  // A node change relaunches that side only; the allocation moves them all.
  EXPECT_EQ(ScopeOf("deployment.decode.node"), v1::SCOPE_DECODE);
  EXPECT_EQ(ScopeOf("deployment.router.node"), v1::SCOPE_ROUTER);
  EXPECT_EQ(ScopeOf("deployment.placement.kind"), v1::SCOPE_DEPLOYMENT);
  EXPECT_EQ(ScopeOf("deployment.placement.slurm.nodes"), v1::SCOPE_DEPLOYMENT);
}

v1::ExperimentSpec Base() {
  v1::ExperimentSpec spec;
  spec.set_scenario("s");
  spec.mutable_deployment()->mutable_prefill()->add_devices(0);
  spec.mutable_deployment()->mutable_decode()->add_devices(1);
  spec.mutable_workload()->set_concurrency(64);
  (*spec.mutable_labels())["owner"] = "me";
  return spec;
}

TEST(ScopeTest, DiffListsChangedLeavesWithScope) {
  v1::ExperimentSpec before = Base();
  v1::ExperimentSpec after = before;
  ASSERT_THAT(ApplySet(after, "workload.concurrency=96"), IsOk());
  ASSERT_THAT(ApplySet(after, "deployment.decode.extra_args+=--x"), IsOk());
  ASSERT_THAT(ApplySet(after, "labels.team=perf"), IsOk());
  ASSERT_THAT(ApplyUnset(after, "labels.owner"), IsOk());
  std::vector<v1::FieldChange> changes = DiffSpecs(before, after);
  ASSERT_EQ(changes.size(), 4u);
  EXPECT_EQ(changes[0].path(), "deployment.decode.extra_args");
  EXPECT_EQ(changes[0].old_value(), "");
  EXPECT_EQ(changes[0].new_value(), "[\"--x\"]");
  EXPECT_EQ(changes[0].scope(), v1::SCOPE_DECODE);
  EXPECT_EQ(changes[1].path(), "workload.concurrency");
  EXPECT_EQ(changes[1].old_value(), "64");
  EXPECT_EQ(changes[1].new_value(), "96");
  EXPECT_EQ(changes[1].scope(), v1::SCOPE_LOAD);
  EXPECT_EQ(changes[2].path(), "labels.owner");
  EXPECT_EQ(changes[2].new_value(), "");
  EXPECT_EQ(changes[3].path(), "labels.team");
  EXPECT_EQ(changes[3].scope(), v1::SCOPE_NOTHING);
  EXPECT_TRUE(DiffSpecs(before, before).empty());
}

TEST(ScopeTest, FingerprintsMoveOnlyForTheirOwnSide) {
  v1::ExperimentSpec base = Base();
  v1::Fingerprints f0 = ComputeFingerprints(base);

  v1::ExperimentSpec load = base;
  ASSERT_THAT(ApplySet(load, "workload.concurrency=96"), IsOk());
  ASSERT_THAT(ApplySet(load, "limits.formal_deadline=1h"), IsOk());
  v1::Fingerprints f1 = ComputeFingerprints(load);
  EXPECT_EQ(f1.prefill(), f0.prefill());
  EXPECT_EQ(f1.decode(), f0.decode());
  EXPECT_EQ(f1.router(), f0.router());
  EXPECT_EQ(f1.warmup(), f0.warmup());
  EXPECT_EQ(f1.cache(), f0.cache());

  v1::ExperimentSpec decode = base;
  ASSERT_THAT(ApplySet(decode, "deployment.decode.max_num_seqs=128"), IsOk());
  v1::Fingerprints f2 = ComputeFingerprints(decode);
  EXPECT_EQ(f2.prefill(), f0.prefill());
  EXPECT_NE(f2.decode(), f0.decode());
  EXPECT_EQ(f2.router(), f0.router());

  v1::ExperimentSpec engine = base;
  ASSERT_THAT(ApplySet(engine, "deployment.engine=vllm"), IsOk());
  v1::Fingerprints f3 = ComputeFingerprints(engine);
  EXPECT_NE(f3.prefill(), f0.prefill());
  EXPECT_NE(f3.decode(), f0.decode());
  EXPECT_NE(f3.router(), f0.router());

  v1::ExperimentSpec cache = base;
  ASSERT_THAT(ApplySet(cache, "workload.dataset.prefix_cache_ratio=0.5"), IsOk());
  EXPECT_NE(ComputeFingerprints(cache).cache(), f0.cache());
  EXPECT_EQ(ComputeFingerprints(cache).decode(), f0.decode());
}

// vllm-ascend's Mooncake connector names both sides' DP and TP in each
// side's launch, so a decode DP change must relaunch prefill too: the scope
// says so in the .proto (DEPLOYMENT), not in any table of the planner.
TEST(ScopeTest, ParallelLayoutOfOneSideRelaunchesBoth) {
  v1::ExperimentSpec base = Base();
  v1::Fingerprints f0 = ComputeFingerprints(base);
  for (const char* set :
       {"deployment.decode.data_parallel=4", "deployment.prefill.tensor_parallel=2"}) {
    v1::ExperimentSpec changed = base;
    ASSERT_THAT(ApplySet(changed, set), IsOk());
    v1::Fingerprints f = ComputeFingerprints(changed);
    EXPECT_NE(f.prefill(), f0.prefill()) << set;
    EXPECT_NE(f.decode(), f0.decode()) << set;
    std::vector<v1::FieldChange> changes = DiffSpecs(base, changed);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].scope(), v1::SCOPE_DEPLOYMENT) << set;
  }
  // Other instance fields stay with their side.
  v1::ExperimentSpec memory = base;
  ASSERT_THAT(ApplySet(memory, "deployment.decode.gpu_memory_utilization=0.8"), IsOk());
  EXPECT_EQ(ComputeFingerprints(memory).prefill(), f0.prefill());
  EXPECT_NE(ComputeFingerprints(memory).decode(), f0.decode());
}

TEST(ScopeTest, EmptySubMessageFingerprintsLikeAbsent) {
  v1::ExperimentSpec a = Base();
  v1::ExperimentSpec b = Base();
  b.mutable_deployment()->mutable_router();
  EXPECT_EQ(ComputeFingerprints(a).router(), ComputeFingerprints(b).router());
}

}  // namespace
}  // namespace servelab::core::spec
