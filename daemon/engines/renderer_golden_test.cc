// Golden-file tests of the rendered launch commands: Render's output in
// CommandToText form is compared with daemon/engines/testdata/NAME.golden.
// Regenerate after an intended change with
//   SERVELAB_UPDATE_GOLDEN=1 ctest --test-dir BUILD -R RendererGolden
// and review the diff.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/engines/command_renderer.h"
#include "daemon/engines/render_common.h"
#include "daemon/engines/sglang_renderer.h"
#include "daemon/engines/vllm_renderer.h"
#include "google/protobuf/text_format.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"

namespace servelab::engines {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kLogDir[] = "/state/logs/exp-1";

// A P/D MoE deployment in the shape of docs/design.md §1 (8 + 8 devices).
v1::ExperimentSpec PdSpec(v1::Engine engine) {
  v1::ExperimentSpec spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        scenario: "128k-cache90"
        deployment {
          prefill {
            model: "/models/moe"
            devices: [ 0, 1, 2, 3, 4, 5, 6, 7 ]
            data_parallel: 2
            tensor_parallel: 4
            expert_parallel: 8
            max_num_batched_tokens: 16384
            max_num_seqs: 64
            max_model_len: 163840
            extra_args: [ "--trust-remote-code" ]
            env { key: "UCX_TLS" value: "all" }
            command_argv: [
              "/opt/serve/bin/serve",
              "--model={deployment.prefill.model}",
              "--role",
              "{side}",
              "--port",
              "{port}",
              "--devices",
              "{deployment.prefill.devices}",
              "--chunk",
              "{deployment.prefill.max_num_batched_tokens}",
              "--scenario",
              "{scenario}",
              "--json={{\"a\":1}}"
            ]
          }
          decode {
            model: "/models/moe"
            devices: [ 8, 9, 10, 11, 12, 13, 14, 15 ]
            data_parallel: 8
            tensor_parallel: 1
            expert_parallel: 8
            max_num_seqs: 128
            max_model_len: 163840
            command_argv: [
              "/opt/serve/bin/serve",
              "--model",
              "{deployment.decode.model}",
              "--port",
              "{port}",
              "--layout",
              "{deployment.decode.expert_layout.path}",
              "--layout-sha",
              "{deployment.decode.expert_layout.sha256}",
              "--prefill",
              "{prefill_url}"
            ]
            env { key: "LOG_DIR" value: "{log_dir}/decode" }
          }
          router {
            extra_args: [ "--verbose" ]
            command_argv: [
              "/opt/serve/bin/router",
              "--listen",
              "{port}",
              "--p",
              "{prefill_url}",
              "--d",
              "{decode_url}"
            ]
          }
        }
        limits { formal_deadline { seconds: 1800 } }
      )pb",
      &spec));
  spec.mutable_deployment()->set_engine(engine);
  if (engine == v1::ENGINE_COMMAND || engine == v1::ENGINE_SGLANG) {
    spec.mutable_deployment()->mutable_decode()->mutable_expert_layout()->set_path(
        "/layouts/decode-fitted.json");
    spec.mutable_deployment()->mutable_decode()->mutable_expert_layout()->set_sha256("ab12cd");
  }
  if (engine != v1::ENGINE_COMMAND) {
    // Templates mean nothing to the other engines, and their proxies have
    // no --verbose (toy_proxy_server.py would exit on it).
    spec.mutable_deployment()->mutable_router()->clear_command_argv();
    spec.mutable_deployment()->mutable_router()->clear_extra_args();
    spec.mutable_deployment()->mutable_decode()->mutable_env()->erase("LOG_DIR");
  }
  if (engine == v1::ENGINE_VLLM_ASCEND) {
    // vllm-ascend's online-DP shape: decode as 8 external DP ranks of TP 1,
    // its expert map frozen into the spec; HCCL networking.
    v1::DeploymentSpec& d = *spec.mutable_deployment();
    d.mutable_decode()->set_external_data_parallel(true);
    d.mutable_decode()->mutable_expert_layout()->set_path("/layouts/decode-fitted.json");
    d.mutable_decode()->mutable_expert_layout()->set_sha256("ab12cd");
    d.mutable_decode()->set_additional_config(R"({"torchair_graph_config":{"enabled":true}})");
    d.mutable_prefill()->set_quantization("ascend");
    d.mutable_decode()->set_quantization("ascend");
    d.mutable_prefill()->set_gpu_memory_utilization(0.9);
    d.mutable_ascend()->set_hccl_if_ip("127.0.0.1");
    d.mutable_ascend()->set_socket_ifname("lo");
    d.mutable_ascend()->set_hccl_buffsize(1024);
  }
  return spec;
}

VllmOptions TestVllmOptions() {
  VllmOptions options;
  options.proxy_script = "/opt/vllm/tests/v1/kv_connector/nixl_integration/toy_proxy_server.py";
  options.ascend_proxy_script =
      "/opt/vllm-ascend/examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py";
  return options;
}

std::string Env(const absl::StatusOr<core::LaunchCommand>& c, const std::string& name) {
  if (!c.ok() || c->env.count(name) == 0) return "(unset)";
  return c->env.at(name);
}

const core::Endpoints kEndpoints{8100, 8200, 8000};

void ExpectGolden(const absl::StatusOr<core::LaunchCommand>& command, const std::string& name) {
  ASSERT_THAT(command, IsOk());
  std::string text = CommandToText(*command);
  std::string path = testing::SourcePath("daemon/engines/testdata/" + name + ".golden");
  if (std::getenv("SERVELAB_UPDATE_GOLDEN") != nullptr) {
    testing::WriteFile(path, text);
    return;
  }
  ASSERT_TRUE(testing::FileExists(path)) << path << " missing; run with SERVELAB_UPDATE_GOLDEN=1";
  EXPECT_EQ(text, testing::ReadFile(path)) << "golden " << path;
}

constexpr VllmPlatform kCuda = VllmPlatform::kCuda;
constexpr VllmPlatform kAscend = VllmPlatform::kAscend;

TEST(RendererGoldenTest, Vllm) {
  VllmOptions options = TestVllmOptions();
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM);
  ExpectGolden(RenderVllm(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, options, kCuda),
               "vllm_prefill");
  ExpectGolden(RenderVllm(spec, v1::SIDE_DECODE, kEndpoints, kLogDir, options, kCuda),
               "vllm_decode");
  ExpectGolden(RenderVllm(spec, v1::SIDE_ROUTER, kEndpoints, kLogDir, options, kCuda),
               "vllm_router");
}

// NIXL's side channel listens on VLLM_NIXL_SIDE_CHANNEL_PORT + rank: P and D
// on one host need disjoint ranges, and the host it binds.
TEST(RendererGoldenTest, VllmNixlSideChannelRangesDoNotOverlap) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM);
  spec.mutable_deployment()->mutable_kv_transfer()->set_side_channel_base_port(7000);
  auto p = RenderVllm(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, TestVllmOptions(), kCuda);
  auto d = RenderVllm(spec, v1::SIDE_DECODE, kEndpoints, kLogDir, TestVllmOptions(), kCuda);
  EXPECT_EQ(Env(p, "VLLM_NIXL_SIDE_CHANNEL_PORT"), "7000");
  EXPECT_EQ(Env(d, "VLLM_NIXL_SIDE_CHANNEL_PORT"), "7008");  // After P's DP 2 x TP 4 ranks.
  EXPECT_EQ(Env(p, "VLLM_NIXL_SIDE_CHANNEL_HOST"), "127.0.0.1");
  EXPECT_EQ(Env(d, "VLLM_NIXL_SIDE_CHANNEL_HOST"), "127.0.0.1");
}

// Prefill advertises its side-channel host to decode: on two nodes each side
// binds and advertises its own node, unless the spec names one host.
TEST(RendererGoldenTest, VllmNixlSideChannelHostIsEachSidesOwnNode) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM);
  core::Endpoints endpoints = kEndpoints;
  endpoints.prefill_host = "node-p";
  endpoints.decode_host = "node-d";
  auto p = RenderVllm(spec, v1::SIDE_PREFILL, endpoints, kLogDir, TestVllmOptions(), kCuda);
  auto d = RenderVllm(spec, v1::SIDE_DECODE, endpoints, kLogDir, TestVllmOptions(), kCuda);
  EXPECT_EQ(Env(p, "VLLM_NIXL_SIDE_CHANNEL_HOST"), "node-p");
  EXPECT_EQ(Env(d, "VLLM_NIXL_SIDE_CHANNEL_HOST"), "node-d");
  spec.mutable_deployment()->mutable_kv_transfer()->set_side_channel_host("10.0.0.7");
  p = RenderVllm(spec, v1::SIDE_PREFILL, endpoints, kLogDir, TestVllmOptions(), kCuda);
  EXPECT_EQ(Env(p, "VLLM_NIXL_SIDE_CHANNEL_HOST"), "10.0.0.7");
}

// Prefill keeps an aborted request's KV for VLLM_NIXL_ABORT_REQUEST_TIMEOUT;
// the spec's value goes to prefill only, in whole seconds.
TEST(RendererGoldenTest, AbortRequestTimeoutGoesToPrefillOnly) {
  for (VllmPlatform platform : {kCuda, kAscend}) {
    v1::ExperimentSpec spec = PdSpec(platform == kCuda ? v1::ENGINE_VLLM : v1::ENGINE_VLLM_ASCEND);
    spec.mutable_deployment()->mutable_kv_transfer()->mutable_abort_request_timeout()->set_seconds(
        45);
    auto p = RenderVllm(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, TestVllmOptions(), platform);
    auto d = RenderVllm(spec, v1::SIDE_DECODE, kEndpoints, kLogDir, TestVllmOptions(), platform);
    ASSERT_THAT(p, IsOk());
    ASSERT_THAT(d, IsOk());
    EXPECT_EQ(p->env.at("VLLM_NIXL_ABORT_REQUEST_TIMEOUT"), "45");
    EXPECT_EQ(d->env.count("VLLM_NIXL_ABORT_REQUEST_TIMEOUT"), 0u);
  }
}

TEST(RendererGoldenTest, VllmAscendRefusesTheLayerwiseConnectorItCannotProxy) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM_ASCEND);
  spec.mutable_deployment()->mutable_kv_transfer()->set_backend("MooncakeLayerwiseConnector");
  EXPECT_THAT(
      RenderVllm(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, TestVllmOptions(), kAscend),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("deployment.kv_transfer.backend: \"MooncakeLayerwiseConnector\" needs")));
}

// vLLM reports cached tokens per request only with this flag; SGLang only
// with --enable-cache-report (and serves /metrics only with --enable-metrics).
TEST(RendererGoldenTest, CachedTokenReportingIsAlwaysOn) {
  using ::testing::Contains;
  for (v1::Engine engine : {v1::ENGINE_VLLM, v1::ENGINE_VLLM_ASCEND}) {
    auto c = RenderVllm(PdSpec(engine), v1::SIDE_DECODE, kEndpoints, kLogDir, TestVllmOptions(),
                        engine == v1::ENGINE_VLLM ? kCuda : kAscend);
    ASSERT_THAT(c, IsOk());
    EXPECT_THAT(c->argv, Contains("--enable-prompt-tokens-details"));
    EXPECT_EQ(Env(c, "VLLM_SERVER_DEV_MODE"), "1");
  }
  auto s = RenderSglang(PdSpec(v1::ENGINE_SGLANG), v1::SIDE_DECODE, kEndpoints, kLogDir, {});
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(s->argv, Contains("--enable-cache-report"));
  EXPECT_THAT(s->argv, Contains("--enable-metrics"));
}

TEST(RendererGoldenTest, VllmAscend) {
  VllmOptions options = TestVllmOptions();
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM_ASCEND);
  core::Endpoints endpoints = kEndpoints;
  endpoints.decode_extra_ports = {8201, 8202, 8203, 8204, 8205, 8206, 8207};
  ExpectGolden(RenderVllm(spec, v1::SIDE_PREFILL, endpoints, kLogDir, options, kAscend),
               "vllm_ascend_prefill");
  ExpectGolden(RenderVllm(spec, v1::SIDE_DECODE, endpoints, kLogDir, options, kAscend),
               "vllm_ascend_decode");
  ExpectGolden(RenderVllm(spec, v1::SIDE_ROUTER, endpoints, kLogDir, options, kAscend),
               "vllm_ascend_router");
}

// Mooncake names both sides' DP and TP in each side's config: a decode DP
// change changes prefill's command too (hence their scope DEPLOYMENT).
TEST(RendererGoldenTest, VllmAscendMooncakeNamesBothSides) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM_ASCEND);
  auto before = RenderVllm(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, TestVllmOptions(), kAscend);
  spec.mutable_deployment()->mutable_decode()->set_data_parallel(4);
  spec.mutable_deployment()->mutable_decode()->mutable_devices()->Truncate(4);
  auto after = RenderVllm(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, TestVllmOptions(), kAscend);
  ASSERT_THAT(before, IsOk());
  ASSERT_THAT(after, IsOk());
  EXPECT_NE(before->argv, after->argv);
  EXPECT_THAT(absl::StrJoin(after->argv, " "), HasSubstr(R"("decode":{"dp_size":4,"tp_size":1})"));
}

TEST(RendererGoldenTest, VllmAscendExternalDpSplitsDevicesAndPorts) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM_ASCEND);
  auto d = RenderVllm(spec, v1::SIDE_DECODE, kEndpoints, kLogDir, TestVllmOptions(), kAscend);
  ASSERT_THAT(d, IsOk());
  ASSERT_EQ(d->extra_ranks.size(), 7u);
  EXPECT_EQ(d->env.at("ASCEND_RT_VISIBLE_DEVICES"), "8");
  EXPECT_EQ(d->extra_ranks[6].env.at("ASCEND_RT_VISIBLE_DEVICES"), "15");
  EXPECT_EQ(d->extra_ranks[6].port, 8207);
  EXPECT_THAT(d->extra_ranks[6].argv, ::testing::Contains("--data-parallel-rank"));
  spec.mutable_deployment()->mutable_decode()->add_devices(16);  // 9 devices, 8 ranks.
  EXPECT_THAT(RenderVllm(spec, v1::SIDE_DECODE, kEndpoints, kLogDir, TestVllmOptions(), kAscend),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deployment.decode.devices")));
}

// Every rendered flag is checked against the engine release's flag table.
TEST(RendererGoldenTest, FlagsTheEngineLacksFailRender) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM);
  spec.mutable_deployment()->mutable_router()->add_extra_args("--verbose");
  EXPECT_THAT(RenderVllm(spec, v1::SIDE_ROUTER, kEndpoints, kLogDir, TestVllmOptions(), kCuda),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--verbose")));
  spec = PdSpec(v1::ENGINE_VLLM);
  spec.mutable_deployment()->mutable_decode()->add_extra_args("--no-such-flag");
  EXPECT_THAT(RenderVllm(spec, v1::SIDE_DECODE, kEndpoints, kLogDir, TestVllmOptions(), kCuda),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--no-such-flag")));
  spec = PdSpec(v1::ENGINE_SGLANG);
  spec.mutable_deployment()->mutable_prefill()->add_extra_args("--tp");  // Not SGLang's spelling.
  EXPECT_THAT(RenderSglang(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tp")));
  spec = PdSpec(v1::ENGINE_VLLM);
  spec.mutable_deployment()->set_engine_version("0.0.1");
  EXPECT_THAT(RenderVllm(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, TestVllmOptions(), kCuda),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deployment.engine_version")));
}

TEST(RendererGoldenTest, ProgramsInTheSpecWinOverDaemonFlags) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM);
  spec.mutable_deployment()->mutable_programs()->set_vllm_binary("/opt/venv/bin/vllm");
  spec.mutable_deployment()->mutable_programs()->set_python_binary("/opt/venv/bin/python3");
  spec.mutable_deployment()->mutable_programs()->set_proxy_script("/opt/proxy/toy_proxy_server.py");
  auto p = RenderVllm(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, TestVllmOptions(), kCuda);
  auto r = RenderVllm(spec, v1::SIDE_ROUTER, kEndpoints, kLogDir, TestVllmOptions(), kCuda);
  ASSERT_THAT(p, IsOk());
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(p->argv[0], "/opt/venv/bin/vllm");
  EXPECT_EQ(r->argv[0], "/opt/venv/bin/python3");
  EXPECT_EQ(r->argv[1], "/opt/proxy/toy_proxy_server.py");
  spec = PdSpec(v1::ENGINE_SGLANG);
  spec.mutable_deployment()->mutable_programs()->set_python_binary("/opt/venv/bin/python3");
  auto s = RenderSglang(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, {});
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->argv[0], "/opt/venv/bin/python3");
}

TEST(RendererGoldenTest, VllmRouterFromCommandArgv) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM);
  spec.mutable_deployment()->mutable_router()->add_command_argv("/usr/bin/python3");
  spec.mutable_deployment()->mutable_router()->add_command_argv("/opt/proxy.py");
  spec.mutable_deployment()->mutable_router()->add_command_argv("--port={port}");
  spec.mutable_deployment()->mutable_router()->add_command_argv("--decoder-ports={decode_port}");
  spec.mutable_deployment()->mutable_router()->add_extra_args("--verbose");
  // A user's own router argv is not checked against vLLM's proxy flags.
  absl::StatusOr<core::LaunchCommand> c =
      RenderVllm(spec, v1::SIDE_ROUTER, kEndpoints, kLogDir, VllmOptions{}, kCuda);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->argv, (std::vector<std::string>{"/usr/bin/python3", "/opt/proxy.py", "--port=8000",
                                               "--decoder-ports=8200", "--verbose"}));
}

TEST(RendererGoldenTest, VllmRejectsWhatItCannotExpress) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM);
  EXPECT_THAT(
      RenderVllm(spec, v1::SIDE_ROUTER, kEndpoints, kLogDir, VllmOptions{}, kCuda),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deployment.programs.proxy_script")));
  spec.mutable_deployment()->mutable_decode()->set_expert_parallel(4);
  EXPECT_THAT(
      RenderVllm(spec, v1::SIDE_DECODE, kEndpoints, kLogDir, VllmOptions{}, kCuda),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deployment.decode.expert_parallel")));
  spec = PdSpec(v1::ENGINE_VLLM);
  spec.mutable_deployment()->mutable_prefill()->mutable_expert_layout()->set_path("/l.json");
  EXPECT_THAT(
      RenderVllm(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, VllmOptions{}, kCuda),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deployment.prefill.expert_layout")));
  spec = PdSpec(v1::ENGINE_VLLM);
  spec.mutable_deployment()->mutable_prefill()->clear_model();
  EXPECT_THAT(RenderVllm(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, VllmOptions{}, kCuda),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deployment.prefill.model")));
}

TEST(RendererGoldenTest, Sglang) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_SGLANG);
  SglangOptions options;
  ExpectGolden(RenderSglang(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, options),
               "sglang_prefill");
  ExpectGolden(RenderSglang(spec, v1::SIDE_DECODE, kEndpoints, kLogDir, options), "sglang_decode");
  ExpectGolden(RenderSglang(spec, v1::SIDE_ROUTER, kEndpoints, kLogDir, options), "sglang_router");
}

TEST(RendererGoldenTest, Command) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_COMMAND);
  ExpectGolden(RenderCommand(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir), "command_prefill");
  ExpectGolden(RenderCommand(spec, v1::SIDE_DECODE, kEndpoints, kLogDir), "command_decode");
  ExpectGolden(RenderCommand(spec, v1::SIDE_ROUTER, kEndpoints, kLogDir), "command_router");
}

TEST(RendererGoldenTest, CommandErrorsNameTheField) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_COMMAND);
  spec.mutable_deployment()->mutable_prefill()->add_command_argv("{deployment.prefill.modle}");
  EXPECT_THAT(RenderCommand(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("deployment.prefill.command_argv[13]: placeholder "
                                 "{deployment.prefill.modle}")));
  spec = PdSpec(v1::ENGINE_COMMAND);
  spec.mutable_deployment()->mutable_router()->clear_command_argv();
  EXPECT_THAT(RenderCommand(spec, v1::SIDE_ROUTER, kEndpoints, kLogDir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("deployment.router.command_argv is empty")));
  spec = PdSpec(v1::ENGINE_COMMAND);
  spec.mutable_deployment()->mutable_decode()->set_command_argv(0, "serve");
  EXPECT_THAT(RenderCommand(spec, v1::SIDE_DECODE, kEndpoints, kLogDir),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("absolute path")));
}

// SGLang's --tp-size is the device count; DP inside it is DP attention; the
// EP group must fit in the TP group (python/sglang/srt/server_args.py).
TEST(RendererGoldenTest, SglangParallelRules) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_SGLANG);
  auto p = RenderSglang(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, {});
  ASSERT_THAT(p, IsOk());
  const std::string argv = absl::StrJoin(p->argv, " ");
  EXPECT_THAT(argv, HasSubstr("--tp-size 8 --dp-size 2 --enable-dp-attention --ep-size 8"));
  spec.mutable_deployment()->mutable_prefill()->set_expert_parallel(3);
  EXPECT_THAT(RenderSglang(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("deployment.prefill.expert_parallel")));
  spec = PdSpec(v1::ENGINE_SGLANG);
  spec.mutable_deployment()->mutable_prefill()->set_expert_parallel(16);
  EXPECT_THAT(RenderSglang(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("<= and divide")));
  spec = PdSpec(v1::ENGINE_SGLANG);
  spec.mutable_deployment()->mutable_kv_transfer()->set_backend("nixl");
  spec.mutable_deployment()->mutable_kv_transfer()->set_ib_device("mlx5_0");
  auto d = RenderSglang(spec, v1::SIDE_DECODE, kEndpoints, kLogDir, {});
  ASSERT_THAT(d, IsOk());
  EXPECT_THAT(
      absl::StrJoin(d->argv, " "),
      HasSubstr("--disaggregation-transfer-backend nixl --disaggregation-ib-device mlx5_0"));
  EXPECT_THAT(absl::StrJoin(d->argv, " "),
              HasSubstr("--init-expert-location /layouts/decode-fitted.json "
                        "--ep-dispatch-algorithm static"));
  spec.mutable_deployment()->mutable_kv_transfer()->set_backend("tcp");
  EXPECT_THAT(
      RenderSglang(spec, v1::SIDE_DECODE, kEndpoints, kLogDir, {}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deployment.kv_transfer.backend")));
}

TEST(RendererGoldenTest, RouterNeedsUpstreamPorts) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_SGLANG);
  EXPECT_THAT(
      RenderSglang(spec, v1::SIDE_ROUTER, core::Endpoints{0, 8200, 8000}, kLogDir, SglangOptions{}),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("prefill port")));
}

TEST(RendererGoldenTest, PortRule) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM);
  // Endpoints win; then the spec's port; then a free port.
  spec.mutable_deployment()->mutable_prefill()->set_port(9100);
  absl::StatusOr<core::LaunchCommand> c =
      RenderVllm(spec, v1::SIDE_PREFILL, core::Endpoints{}, kLogDir, VllmOptions{}, kCuda);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->port, 9100);
  c = RenderVllm(spec, v1::SIDE_DECODE, core::Endpoints{}, kLogDir, VllmOptions{}, kCuda);
  ASSERT_THAT(c, IsOk());
  EXPECT_GT(c->port, 0);
  EXPECT_NE(c->port, 9100);
  EXPECT_THAT(c->argv, ::testing::Contains(absl::StrCat(c->port)));
}

}  // namespace
}  // namespace servelab::engines
