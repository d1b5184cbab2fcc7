#include "daemon/core/spec/freeze.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "daemon/core/spec/canonical.h"
#include "daemon/core/spec/defaults.h"
#include "daemon/core/spec/spec_delta.h"
#include "daemon/core/spec/spec_text.h"
#include "daemon/core/spec/validate.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::core::spec {
namespace {

using servelab::testing::IsOk;
using servelab::testing::StatusIs;
using servelab::testing::TempDir;
using servelab::testing::WriteFile;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

v1::ExperimentSpec Minimal() {
  absl::StatusOr<v1::ExperimentSpec> spec = ParseSpecText(R"(
scenario: s
deployment:
  prefill: {devices: [0]}
  decode: {devices: [1]}
workload:
  dataset: {input_tokens: 100, output_tokens: 10}
  num_requests: 10
  concurrency: 2
)",
                                                          "minimal.yaml");
  EXPECT_THAT(spec, IsOk());
  return *spec;
}

TEST(FreezeTest, AppliesDefaultsAndHashesCanonicalJson) {
  absl::StatusOr<FrozenSpec> frozen = Freeze(Minimal(), "");
  ASSERT_THAT(frozen, IsOk());
  const v1::ExperimentSpec& spec = frozen->spec;
  EXPECT_EQ(spec.deployment().engine(), v1::ENGINE_SIM);
  EXPECT_EQ(spec.deployment().warmup().rounds(), 2);
  EXPECT_EQ(spec.workload().arrival(), v1::ARRIVAL_POISSON);
  EXPECT_EQ(spec.limits().formal_deadline().seconds(), 1800);
  EXPECT_EQ(spec.analysis().percentiles_size(), 3);
  EXPECT_EQ(frozen->canonical_json, CanonicalJson(spec));
  EXPECT_EQ(frozen->sha256, Sha256Hex(frozen->canonical_json));
  // Freezing a frozen spec changes nothing.
  absl::StatusOr<FrozenSpec> again = Freeze(spec, "");
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->sha256, frozen->sha256);
}

TEST(FreezeTest, GivenValuesAreNeverOverridden) {
  v1::ExperimentSpec spec = Minimal();
  ASSERT_THAT(ApplySet(spec, "deployment.warmup.rounds=3"), IsOk());
  ASSERT_THAT(ApplySet(spec, "workload.arrival=constant"), IsOk());
  absl::StatusOr<FrozenSpec> frozen = Freeze(spec, "");
  ASSERT_THAT(frozen, IsOk());
  EXPECT_EQ(frozen->spec.deployment().warmup().rounds(), 3);
  EXPECT_EQ(frozen->spec.workload().arrival(), v1::ARRIVAL_CONSTANT);
}

struct BadValue {
  const char* set;
  const char* path;
};

class FreezeRejectsTest : public ::testing::TestWithParam<BadValue> {};

TEST_P(FreezeRejectsTest, NamesTheField) {
  v1::ExperimentSpec spec = Minimal();
  ASSERT_THAT(ApplySet(spec, GetParam().set), IsOk());
  EXPECT_THAT(Freeze(spec, ""), StatusIs(kInvalid, HasSubstr(GetParam().path)));
}

INSTANTIATE_TEST_SUITE_P(
    BadValues, FreezeRejectsTest,
    ::testing::Values(BadValue{"workload.num_requests=0", "workload.num_requests: must be > 0"},
                      BadValue{"workload.num_requests=-5", "workload.num_requests: must be > 0"},
                      BadValue{"workload.concurrency=0", "workload.concurrency: must be > 0"},
                      BadValue{"workload.request_rate=-1", "workload.request_rate: must be >= 0"},
                      BadValue{"workload.dataset.output_tokens=0",
                               "workload.dataset.output_tokens: must be > 0"},
                      BadValue{"workload.dataset.prefix_cache_ratio=1",
                               "workload.dataset.prefix_cache_ratio: must be in [0, 1)"},
                      BadValue{"scenario=", "scenario: required"},
                      BadValue{"deployment.decode.devices=[0]",
                               "deployment.decode.devices: device 0 is also a prefill device"},
                      BadValue{"deployment.prefill.devices=[]",
                               "deployment.prefill.devices: at least one device"},
                      BadValue{"workload.dataset.input_tokens=40000",
                               "workload.dataset.input_tokens: a request of up to 40010 tokens"},
                      BadValue{"limits.formal_deadline=-5s", "limits.formal_deadline: must not"},
                      BadValue{"analysis.percentiles=[50, 100]", "analysis.percentiles[1]"},
                      BadValue{"deployment.decode.gpu_memory_utilization=1.5",
                               "deployment.decode.gpu_memory_utilization: is a fraction"},
                      BadValue{"deployment.decode.external_data_parallel=true",
                               "deployment.decode.external_data_parallel: one process per DP "
                               "rank is rendered for engines vllm and vllm_ascend only"},
                      BadValue{"deployment.kv_transfer.kv_port=70000",
                               "deployment.kv_transfer.kv_port: must be 0..65535"},
                      BadValue{"deployment.programs.vllm_binary=vllm",
                               "deployment.programs.vllm_binary: must be an absolute path"},
                      BadValue{"deployment.ascend.hccl_buffsize=-1",
                               "deployment.ascend.hccl_buffsize: must be >= 0"},
                      BadValue{"deployment.decode.node=n1",
                               "deployment.decode.node: names a Slurm node, but "
                               "deployment.placement.kind is local"},
                      BadValue{"deployment.placement.slurm.partition=gpu",
                               "deployment.placement.slurm: is set, but"},
                      BadValue{"deployment.kv_transfer.abort_request_timeout=-1s",
                               "deployment.kv_transfer.abort_request_timeout: must not"},
                      BadValue{"deployment.kv_transfer.abort_request_timeout=300s",
                               "deployment.kv_transfer.abort_request_timeout: must be below "
                               "limits.warmup_timeout (300 s), got 300 s"}));

// vLLM's own 480 s KV lease would outlast the default 300 s reset wait.
TEST(FreezeTest, VllmEnginesHoldAnAbortedRequestsKvForLessThanTheResetWaits) {
  for (const char* engine : {"vllm", "vllm_ascend"}) {
    v1::ExperimentSpec spec = Minimal();
    ASSERT_THAT(ApplySet(spec, absl::StrCat("deployment.engine=", engine)), IsOk());
    ApplyDefaults(spec);
    EXPECT_EQ(spec.deployment().kv_transfer().abort_request_timeout().seconds(), 60) << engine;
    v1::ExperimentSpec short_reset = Minimal();
    ASSERT_THAT(ApplySet(short_reset, absl::StrCat("deployment.engine=", engine)), IsOk());
    ASSERT_THAT(ApplySet(short_reset, "limits.warmup_timeout=30s"), IsOk());
    ASSERT_THAT(ApplySet(short_reset, "deployment.prefill.model=/models/m"), IsOk());
    ASSERT_THAT(ApplySet(short_reset, "deployment.decode.model=/models/m"), IsOk());
    ApplyDefaults(short_reset);
    EXPECT_EQ(short_reset.deployment().kv_transfer().abort_request_timeout().seconds(), 15);
    EXPECT_THAT(ValidateSpec(short_reset), IsOk());
  }
  v1::ExperimentSpec sim = Minimal();
  ApplyDefaults(sim);
  EXPECT_FALSE(sim.deployment().kv_transfer().has_abort_request_timeout());
}

// sgl-router's /v1/completions refuses token ids, so SGLang defaults to its
// native /generate; an API the engine does not serve is refused by name.
TEST(FreezeTest, TheApiFitsTheEngine) {
  v1::ExperimentSpec sglang = Minimal();
  ASSERT_THAT(ApplySet(sglang, "deployment.engine=sglang"), IsOk());
  ASSERT_THAT(ApplySet(sglang, "deployment.prefill.model=/models/m"), IsOk());
  ASSERT_THAT(ApplySet(sglang, "deployment.decode.model=/models/m"), IsOk());
  absl::StatusOr<FrozenSpec> frozen = Freeze(sglang, "");
  ASSERT_THAT(frozen, IsOk());
  EXPECT_EQ(frozen->spec.workload().api(), v1::API_GENERATE);
  ASSERT_THAT(ApplySet(sglang, "workload.api=completions"), IsOk());
  EXPECT_THAT(Freeze(sglang, ""),
              StatusIs(kInvalid, HasSubstr("workload.api: completions sends token-id prompts, "
                                           "which sglang_router's /v1/completions refuses")));
  v1::ExperimentSpec sim = Minimal();
  ASSERT_THAT(ApplySet(sim, "workload.api=generate"), IsOk());
  EXPECT_THAT(Freeze(sim, ""),
              StatusIs(kInvalid, HasSubstr("workload.api: generate is SGLang's native /generate, "
                                           "which engine sim does not serve")));
  v1::ExperimentSpec plain = Minimal();
  absl::StatusOr<FrozenSpec> completions = Freeze(plain, "");
  ASSERT_THAT(completions, IsOk());
  EXPECT_EQ(completions->spec.workload().api(), v1::API_COMPLETIONS);
}

TEST(FreezeTest, ChecksSlurmPlacementValues) {
  const std::pair<const char*, const char*> bad[] = {
      {"deployment.placement.slurm.job_id=12x", "deployment.placement.slurm.job_id: \"12x\""},
      {"deployment.placement.slurm.nodes=-1", "deployment.placement.slurm.nodes: must be 0..4096"},
      {"deployment.placement.slurm.partition=a b", "deployment.placement.slurm.partition"},
      {"deployment.placement.slurm.gres=gpu 8", "deployment.placement.slurm.gres"},
      {"deployment.placement.slurm.time_limit=1 day", "deployment.placement.slurm.time_limit"},
      {"deployment.prefill.node=n1;rm", "deployment.prefill.node: \"n1;rm\" is not"},
      {"deployment.router.node=a/b", "deployment.router.node"}};
  for (const auto& [set, message] : bad) {
    v1::ExperimentSpec spec = Minimal();
    ASSERT_THAT(ApplySet(spec, "deployment.placement.kind=slurm"), IsOk());
    ASSERT_THAT(ApplySet(spec, set), IsOk()) << set;
    EXPECT_THAT(Freeze(spec, ""), StatusIs(kInvalid, HasSubstr(message))) << set;
  }
  v1::ExperimentSpec good = Minimal();
  for (const char* set : {"deployment.placement.kind=slurm", "deployment.placement.slurm.job_id=42",
                          "deployment.placement.slurm.gres=gpu:8,npu:2",
                          "deployment.placement.slurm.time_limit=7-00:00:00",
                          "deployment.decode.node=node-02", "deployment.prefill.node=node-01"}) {
    ASSERT_THAT(ApplySet(good, set), IsOk()) << set;
  }
  EXPECT_THAT(Freeze(good, ""), IsOk());
  // On two nodes, both sides may use device 0; on one they may not.
  ASSERT_THAT(ApplySet(good, "deployment.decode.devices=[0]"), IsOk());
  EXPECT_THAT(Freeze(good, ""), IsOk());
  ASSERT_THAT(ApplySet(good, "deployment.decode.node=node-01"), IsOk());
  EXPECT_THAT(Freeze(good, ""), StatusIs(kInvalid, HasSubstr("is also a prefill device")));
}

TEST(FreezeTest, ListsEveryProblem) {
  v1::ExperimentSpec spec = Minimal();
  ASSERT_THAT(ApplySet(spec, "workload.num_requests=0"), IsOk());
  ASSERT_THAT(ApplySet(spec, "workload.concurrency=0"), IsOk());
  EXPECT_THAT(Freeze(spec, ""), StatusIs(kInvalid, AllOf(HasSubstr("workload.num_requests"),
                                                         HasSubstr("workload.concurrency"))));
}

TEST(FreezeTest, ResolvesAndHashesReferencedFiles) {
  TempDir dir;
  WriteFile(dir.File("layout.json"), "{\"experts\": 1}");
  v1::ExperimentSpec spec = Minimal();
  ASSERT_THAT(ApplySet(spec, "deployment.decode.expert_layout=./layout.json"), IsOk());
  absl::StatusOr<FrozenSpec> frozen = Freeze(spec, dir.path());
  ASSERT_THAT(frozen, IsOk());
  const v1::FileRef& layout = frozen->spec.deployment().decode().expert_layout();
  EXPECT_EQ(layout.path(), dir.File("layout.json"));
  EXPECT_EQ(layout.sha256(), Sha256Hex("{\"experts\": 1}"));

  // The file changes after freezing: re-freezing the frozen spec refuses it...
  WriteFile(dir.File("layout.json"), "{\"experts\": 2}");
  EXPECT_THAT(Freeze(frozen->spec, dir.path()),
              StatusIs(kInvalid, AllOf(HasSubstr("deployment.decode.expert_layout.sha256"),
                                       HasSubstr(layout.sha256()))));
  // ...while a delta, which starts without hashes, records the new content.
  v1::ExperimentSpec delta = frozen->spec;
  ClearFileHashes(delta);
  absl::StatusOr<FrozenSpec> refrozen = Freeze(delta, dir.path());
  ASSERT_THAT(refrozen, IsOk());
  EXPECT_EQ(refrozen->spec.deployment().decode().expert_layout().sha256(),
            Sha256Hex("{\"experts\": 2}"));
  EXPECT_NE(refrozen->sha256, frozen->sha256);
}

TEST(FreezeTest, MissingFileIsNotFoundWithItsPath) {
  TempDir dir;
  v1::ExperimentSpec spec = Minimal();
  ASSERT_THAT(ApplySet(spec, "deployment.decode.expert_layout=nope.json"), IsOk());
  EXPECT_THAT(Freeze(spec, dir.path()),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("deployment.decode.expert_layout.path"),
                             HasSubstr("nope.json"), HasSubstr("does not exist"))));
  EXPECT_THAT(Freeze(spec, ""), StatusIs(kInvalid, HasSubstr("needs a base directory")));
}

}  // namespace
}  // namespace servelab::core::spec
