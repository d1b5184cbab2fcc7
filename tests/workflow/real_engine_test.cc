// The acceptance scenarios on the real-engine paths (vLLM, vllm-ascend,
// SGLang): servelabd renders the real commands of each engine, and launches
// them with servelab-engine-shim standing in for the `vllm` and `python3`
// binaries. The shim parses every argv against the engine's flag table,
// enforces its startup rules (and holds its side-channel ports), then runs
// servelab-sim with that engine's compatibility profile: the toy proxy's
// three routes and replaced request ids, dev-mode-only cache resets that
// are refused while KV blocks are leased, cached tokens only with the flag,
// SGLang's /flush_cache and P/D queue gauges, each engine's metric names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "tests/testing/ports.h"
#include "tests/workflow/daemon_fixture.h"
#include "yaml-cpp/yaml.h"

namespace servelab {
namespace {

using ::testing::HasSubstr;
using testing::RunResult;
using testing::SourcePath;

struct EngineCase {
  std::string name;            // Test name suffix.
  std::string spec;            // tests/workflow/testdata/...
  std::string request_metric;  // Finished requests, in the engine's own spelling.
  // A decode-only delta: relaunches decode (and the router), nothing else.
  std::string decode_delta;
  // The flag that must appear in `servelab plan`'s rendered commands.
  std::string plan_flag;
  // The API the load goes through by default: SGLang's native /generate,
  // because sglang_router's /v1/completions refuses token-id prompts.
  v1::Api api = v1::API_COMPLETIONS;
};

void PrintTo(const EngineCase& c, std::ostream* os) { *os << c.name; }

// servelabd with servelab-engine-shim as its `vllm` and `python3`.
class ShimDaemonTest : public DaemonFixture {
 protected:
  void StartDaemon() {
    const std::string shim = testing::BinPath("servelab-engine-shim");
    // The proxy scripts are not read (the shim recognises them by name), but
    // a user's would exist.
    const std::string toy = dir_.File("toy_proxy_server.py");
    const std::string lb = dir_.File("load_balance_proxy_server_example.py");
    testing::WriteFile(toy, "# vLLM's toy proxy\n");
    testing::WriteFile(lb, "# vllm-ascend's load-balance proxy\n");
    DaemonFixture::StartDaemon({"--vllm-binary", shim, "--python-binary", shim, "--proxy-script",
                                toy, "--ascend-proxy-script", lb});
  }

  // Free loopback port blocks for the engines' side channels (NIXL,
  // Mooncake, SGLang bootstrap): the defaults could be taken on a shared
  // machine. Below the ephemeral range (32768+), as the engines' defaults
  // are, so that no client connection of this machine lands in them.
  static int FreePortBlock(int size) {
    std::mt19937 random(std::random_device{}());
    for (int tries = 0; tries < 200; ++tries) {
      const int base = 20000 + static_cast<int>(random() % 12000);
      bool free = true;
      for (int port = base; port < base + size && free; ++port)
        free = testing::CanBindLoopback(port);
      if (free) return base;
    }
    ADD_FAILURE() << "no free block of " << size << " loopback ports";
    return 0;
  }

  std::vector<std::string> PortSets() {
    std::vector<std::string> sets;
    for (const char* field : {"side_channel_base_port", "kv_port", "bootstrap_port"}) {
      sets.insert(sets.end(),
                  {"--set", absl::StrCat("deployment.kv_transfer.", field, "=", FreePortBlock(8))});
    }
    return sets;
  }

  // Submits the spec file with free side-channel ports and `extra` sets.
  std::string SubmitSpec(const std::string& spec, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"-f", SourcePath(spec)};
    for (const std::string& s : PortSets()) args.push_back(s);
    args.insert(args.end(), extra.begin(), extra.end());
    return Submit(args);
  }
};

class RealEngineTest : public ShimDaemonTest, public ::testing::WithParamInterface<EngineCase> {
 protected:
  std::string SubmitBase(const std::vector<std::string>& extra) {
    return SubmitSpec(GetParam().spec, extra);
  }
};

TEST_P(RealEngineTest, BaseThenConcurrencyDeltaThenDecodeDelta) {
  const EngineCase& c = GetParam();
  StartDaemon();
  // 1. The base experiment runs every stage through the real commands.
  v1::Experiment base = WaitFinal(SubmitBase({}));
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  EXPECT_EQ(base.spec().workload().api(), c.api);
  EXPECT_EQ(base.progress().formal_requests_sent(), 64);
  EXPECT_EQ(base.result().whole().requests_completed(), 64);
  // The rendered reporting flags work: cached tokens arrive per request.
  EXPECT_TRUE(base.result().cached_tokens_reported());
  EXPECT_GT(base.result().prefix_cache_hit_ratio(), 0);
  // Routes verified from P's and D's own counters, not from headers.
  EXPECT_GE(Counter(base, v1::STAGE_ROUTE_VERIFY, "prefill_requests_delta"), 1);
  EXPECT_GE(Counter(base, v1::STAGE_ROUTE_VERIFY, "decode_requests_delta"), 1);
  EXPECT_GE(Counter(base, v1::STAGE_CACHE_RESET, "prefill_reset_attempts"), 1);
  const int prefill_pid = Counter(base, v1::STAGE_LAUNCH_PREFILL, "pid");
  const int prefill_port = Counter(base, v1::STAGE_LAUNCH_PREFILL, "port");
  const int decode_pid = Counter(base, v1::STAGE_LAUNCH_DECODE, "pid");
  const int decode_port = Counter(base, v1::STAGE_LAUNCH_DECODE, "port");
  ASSERT_TRUE(Alive(prefill_pid) && Alive(decode_pid));

  // 2. A pure concurrency delta relaunches nothing and re-warms nothing.
  RunResult plan = Cli({"plan", "--base", base.id(), "--set", "workload.concurrency=8"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("launch_prefill reuse"));
  EXPECT_THAT(plan.out, HasSubstr(c.plan_flag));
  const double prefill_requests = MetricSum(prefill_port, c.request_metric);
  v1::Experiment c8 = WaitFinal(Submit({"--base", base.id(), "--set", "workload.concurrency=8"}));
  ASSERT_EQ(c8.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << c8.blocker();
  for (v1::StageName s : {v1::STAGE_LAUNCH_PREFILL, v1::STAGE_LAUNCH_DECODE,
                          v1::STAGE_LAUNCH_ROUTER, v1::STAGE_WARMUP, v1::STAGE_ROUTE_VERIFY}) {
    EXPECT_EQ(StageOf(c8, s).status(), v1::STAGE_STATUS_REUSED) << v1::StageName_Name(s);
  }
  EXPECT_TRUE(Alive(prefill_pid) && Alive(decode_pid));
  // P saw the formal load, the seeds and the resets' check requests (before
  // the load, none when the base's drain reset ahead; after c8's drain, the
  // reset ahead), and no warmup.
  EXPECT_EQ(MetricSum(prefill_port, c.request_metric) - prefill_requests,
            64 + 4 + Counter(c8, v1::STAGE_CACHE_RESET, "prefill_cache_check_requests") +
                Counter(c8, v1::STAGE_DRAIN_CONFIRM, "prefill_cache_check_requests"));
  // The proxy dropped x-servelab-load; the load tag still reached decode in
  // the body's `user` field.
  YAML::Node loads = YAML::Load(HttpBody(decode_port, "/debug/loads"))["loads"];
  EXPECT_TRUE(loads[c8.id() + "/formal/1"].IsDefined()) << HttpBody(decode_port, "/debug/loads");
  EXPECT_FALSE(loads[c8.id() + "/warmup/1"].IsDefined());

  // 3. A decode-side delta relaunches decode only.
  v1::Experiment d = WaitFinal(Submit({"--base", c8.id(), "--set", c.decode_delta}));
  ASSERT_EQ(d.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << d.blocker();
  EXPECT_EQ(StageOf(d, v1::STAGE_LAUNCH_PREFILL).status(), v1::STAGE_STATUS_REUSED);
  EXPECT_EQ(StageOf(d, v1::STAGE_LAUNCH_DECODE).status(), v1::STAGE_STATUS_SUCCEEDED);
  EXPECT_TRUE(Alive(prefill_pid));
  EXPECT_NE(Counter(d, v1::STAGE_LAUNCH_DECODE, "pid"), decode_pid);
  EXPECT_TRUE(testing::WaitFor([&] { return !Alive(decode_pid); }, absl::Seconds(10)));
}

TEST_P(RealEngineTest, KillDuringFormalLoadThenResume) {
  StartDaemon();
  const std::string id =
      SubmitBase({"--set", "workload.num_requests=400", "--set", "workload.concurrency=4"});
  RunResult sent = Cli({"wait", id, "--until", "sent", "--timeout", "100s"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err << Status(id).blocker();
  ASSERT_TRUE(WaitForFormalRecords());
  v1::Experiment running = Status(id);
  const int prefill_pid = Counter(running, v1::STAGE_LAUNCH_PREFILL, "pid");
  KillDaemon();

  StartDaemon();
  v1::Experiment e = Status(id);
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::LOAD_INTERRUPTED) << e.blocker();
  ASSERT_EQ(Cli({"resume", id}).exit_code, 0);
  e = WaitFinal(id);
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  EXPECT_EQ(Counter(e, v1::STAGE_FORMAL_LOAD, "attempt"), 2);
  EXPECT_EQ(StageOf(e, v1::STAGE_LAUNCH_PREFILL).attempt(), 1);  // Re-adopted, not relaunched.
  EXPECT_EQ(Counter(e, v1::STAGE_LAUNCH_PREFILL, "pid"), prefill_pid);
  EXPECT_TRUE(Alive(prefill_pid));
}

// One side, several processes: when one DP rank of decode dies while the
// daemon is down, the restarted daemon does not adopt the half-dead side. It
// stops the surviving rank and the next experiment relaunches decode whole.
TEST_F(ShimDaemonTest, ExternalDpRankLostWhileDaemonDownIsNotAdoptedHalf) {
  StartDaemon();
  v1::Experiment base = WaitFinal(SubmitSpec("tests/workflow/testdata/pd-vllm-ascend.yaml", {}));
  ASSERT_EQ(base.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << base.blocker();
  const int rank0 = Counter(base, v1::STAGE_LAUNCH_DECODE, "pid");
  const int rank1 = Counter(base, v1::STAGE_LAUNCH_DECODE, "rank1_pid");
  const int prefill_pid = Counter(base, v1::STAGE_LAUNCH_PREFILL, "pid");
  ASSERT_TRUE(Alive(rank0) && Alive(rank1));
  StopDaemon();
  kill(rank1, SIGKILL);
  ASSERT_TRUE(testing::WaitFor([&] { return !Alive(rank1); }, absl::Seconds(10)));

  StartDaemon();
  EXPECT_TRUE(testing::WaitFor([&] { return !Alive(rank0); }, absl::Seconds(10)));
  EXPECT_TRUE(Alive(prefill_pid));
  v1::Experiment next = WaitFinal(Submit({"--base", base.id(), "--set", "workload.concurrency=8"}));
  ASSERT_EQ(next.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << next.blocker();
  EXPECT_EQ(StageOf(next, v1::STAGE_LAUNCH_DECODE).status(), v1::STAGE_STATUS_SUCCEEDED);
  EXPECT_EQ(StageOf(next, v1::STAGE_LAUNCH_PREFILL).status(), v1::STAGE_STATUS_REUSED);
  EXPECT_GT(Counter(next, v1::STAGE_LAUNCH_DECODE, "rank1_pid"), 0);
}

// Prefill as external DP ranks on one host: each `vllm serve
// --data-parallel-rank N` has data_parallel_rank_local 0, so the Mooncake
// connector would bind every rank's handshake ports at the same kv_port.
// The shim binds them as the connector does, so a shared kv_port fails the
// second rank's launch; each rank's own kv_port lets the whole load through.
TEST_F(ShimDaemonTest, ExternalDpPrefillRanksEachBindTheirOwnMooncakePorts) {
  StartDaemon();
  v1::Experiment e = WaitFinal(SubmitSpec("tests/workflow/testdata/pd-vllm-ascend.yaml",
                                          {"--set", "deployment.prefill.data_parallel=2", "--set",
                                           "deployment.prefill.tensor_parallel=1", "--set",
                                           "deployment.prefill.external_data_parallel=true"}));
  ASSERT_EQ(e.state(), v1::EXPERIMENT_STATE_SUCCEEDED) << e.blocker();
  EXPECT_GT(Counter(e, v1::STAGE_LAUNCH_PREFILL, "rank1_pid"), 0);
  EXPECT_EQ(e.result().whole().requests_completed(), 64);
  // Each rank names its own device to Mooncake.
  RunResult plan = Cli({"plan", "--base", e.id(), "--set", "workload.concurrency=8"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("env PHYSICAL_DEVICES=0\n"));
  EXPECT_THAT(plan.out, HasSubstr("env PHYSICAL_DEVICES=1\n"));
}

// A flag the engine release lacks fails preflight: nothing launched, and
// `servelab plan` names it before anything is stored.
TEST_P(RealEngineTest, FlagTheEngineLacksFailsBeforeAnyLaunch) {
  StartDaemon();
  std::vector<std::string> args = {"plan", "-f", SourcePath(GetParam().spec), "--set",
                                   "deployment.decode.extra_args+=--no-such-flag"};
  RunResult plan = Cli(args);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("cannot render"));
  EXPECT_THAT(plan.out, HasSubstr("--no-such-flag"));
  v1::Experiment e =
      WaitFinal(SubmitBase({"--set", "deployment.decode.extra_args+=--no-such-flag"}));
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_FAILED);
  EXPECT_EQ(e.failure_class(), v1::NO_REQUESTS_SENT);
  EXPECT_THAT(e.blocker(), HasSubstr("--no-such-flag"));
  EXPECT_EQ(StageOf(e, v1::STAGE_PREFLIGHT).status(), v1::STAGE_STATUS_FAILED);
  EXPECT_EQ(Counter(e, v1::STAGE_LAUNCH_PREFILL, "pid"), -1);
  EXPECT_FALSE(StageOf(e, v1::STAGE_LAUNCH_PREFILL).has_started_at());
}

// The real-engine examples under deploy/examples/: `servelab plan` shows the
// exact commands and environment each side would run, nothing stored.
class ExamplePlanTest : public DaemonFixture {};

TEST_F(ExamplePlanTest, EveryRealEngineExamplePrintsItsCommands) {
  DaemonFixture::StartDaemon({});
  const std::pair<std::string, std::vector<std::string>> examples[] = {
      {"vllm-nixl-16gpu.yaml",
       {"/usr/local/bin/vllm\n    serve\n", "env VLLM_NIXL_SIDE_CHANNEL_PORT=5600",
        "env VLLM_NIXL_SIDE_CHANNEL_PORT=5608", "env CUDA_VISIBLE_DEVICES=8,9,10,11,12,13,14,15",
        "toy_proxy_server.py\n    --host", "--gpu-memory-utilization\n    0.9"}},
      {"vllm-ascend-mooncake-p8d8.yaml",
       {"\"kv_connector\":\"MooncakeConnectorV1\"", "env HCCL_IF_IP=127.0.0.1",
        "env ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "    rank 7\n",
        "env ASCEND_RT_VISIBLE_DEVICES=15", "\"expert_map_path\":\"/",
        "load_balance_proxy_server_example.py"}},
      {"sglang-mooncake-16gpu.yaml",
       {"sglang.launch_server", "--enable-dp-attention", "--disaggregation-ib-device\n    mlx5_0",
        "--init-expert-location", "--enable-cache-report", "sglang_router.launch_router"}},
      // Two Slurm nodes: every server listens on all addresses and the
      // router reaches each side on its node.
      {"sglang-slurm-two-nodes.yaml",
       {"--host\n    0.0.0.0", "--prefill\n    http://gpu-node-1:30000",
        "--decode\n    http://gpu-node-2:30000", "--port\n    8000"}},
  };
  for (const auto& [file, wanted] : examples) {
    RunResult plan = Cli({"plan", "-f", SourcePath("deploy/examples/" + file)});
    ASSERT_EQ(plan.exit_code, 0) << file << plan.err;
    EXPECT_THAT(plan.out, HasSubstr("plan only: nothing stored")) << file;
    EXPECT_THAT(plan.out, ::testing::Not(HasSubstr("cannot render"))) << file << plan.out;
    for (const std::string& w : wanted) EXPECT_THAT(plan.out, HasSubstr(w)) << file;
  }
  RunResult list = Cli({"list"});
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_THAT(list.out, ::testing::Not(HasSubstr("exp-")));
}

INSTANTIATE_TEST_SUITE_P(
    Engines, RealEngineTest,
    ::testing::Values(EngineCase{"Vllm", "tests/workflow/testdata/pd-vllm.yaml",
                                 "vllm:request_success_total", "deployment.decode.max_num_seqs=96",
                                 "VLLM_NIXL_SIDE_CHANNEL_PORT="},
                      EngineCase{"VllmAscend", "tests/workflow/testdata/pd-vllm-ascend.yaml",
                                 "vllm:request_success_total",
                                 "deployment.decode.expert_layout=" +
                                     SourcePath("deploy/examples/layouts/decode-layout-b.json"),
                                 "\"kv_connector\":\"MooncakeConnectorV1\""},
                      EngineCase{"Sglang", "tests/workflow/testdata/pd-sglang.yaml",
                                 "sglang:num_requests_total",
                                 "deployment.decode.expert_layout=" +
                                     SourcePath("deploy/examples/layouts/decode-layout-b.json"),
                                 "--enable-dp-attention", v1::API_GENERATE}),
    [](const ::testing::TestParamInfo<EngineCase>& info) { return info.param.name; });

}  // namespace
}  // namespace servelab
