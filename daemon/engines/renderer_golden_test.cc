// Golden-file tests of the rendered launch commands: Render's output in
// CommandToText form is compared with daemon/engines/testdata/NAME.golden.
// Regenerate after an intended change with
//   SERVELAB_UPDATE_GOLDEN=1 ctest --test-dir BUILD -R RendererGolden
// and review the diff.
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
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

// A P/D MoE deployment in the shape of DESIGN §1 (8 + 8 cards).
v1::ExperimentSpec PdSpec(v1::Engine engine) {
  v1::ExperimentSpec spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    scenario: "128k-cache90"
    deployment {
      prefill {
        model: "/models/moe"
        devices: [0, 1, 2, 3, 4, 5, 6, 7]
        data_parallel: 2
        tensor_parallel: 4
        expert_parallel: 8
        max_num_batched_tokens: 16384
        max_num_seqs: 64
        max_model_len: 163840
        extra_args: ["--trust-remote-code"]
        env { key: "UCX_TLS" value: "all" }
        command_argv: ["/opt/serve/bin/serve", "--model={deployment.prefill.model}",
                       "--role", "{side}", "--port", "{port}", "--devices",
                       "{deployment.prefill.devices}", "--chunk",
                       "{deployment.prefill.max_num_batched_tokens}",
                       "--scenario", "{scenario}", "--json={{\"a\":1}}"]
      }
      decode {
        model: "/models/moe"
        devices: [8, 9, 10, 11, 12, 13, 14, 15]
        data_parallel: 8
        tensor_parallel: 1
        expert_parallel: 8
        max_num_seqs: 128
        max_model_len: 163840
        command_argv: ["/opt/serve/bin/serve", "--model", "{deployment.decode.model}",
                       "--port", "{port}", "--layout",
                       "{deployment.decode.expert_layout.path}",
                       "--layout-sha", "{deployment.decode.expert_layout.sha256}",
                       "--prefill", "{prefill_url}"]
        env { key: "LOG_DIR" value: "{log_dir}/decode" }
      }
      router {
        extra_args: ["--verbose"]
        command_argv: ["/opt/serve/bin/router", "--listen", "{port}", "--p", "{prefill_url}",
                       "--d", "{decode_url}"]
      }
    }
    limits { formal_deadline { seconds: 1800 } }
  )pb", &spec));
  spec.mutable_deployment()->set_engine(engine);
  if (engine == v1::ENGINE_COMMAND || engine == v1::ENGINE_SGLANG) {
    spec.mutable_deployment()->mutable_decode()->mutable_expert_layout()->set_path(
        "/layouts/decode-fitted.json");
    spec.mutable_deployment()->mutable_decode()->mutable_expert_layout()->set_sha256("ab12cd");
  }
  if (engine != v1::ENGINE_COMMAND) {
    // Templates mean nothing to the other engines.
    spec.mutable_deployment()->mutable_router()->clear_command_argv();
    spec.mutable_deployment()->mutable_decode()->mutable_env()->erase("LOG_DIR");
  }
  return spec;
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

TEST(RendererGoldenTest, Vllm) {
  VllmOptions options;
  options.proxy_script = "/opt/vllm/tests/v1/kv_connector/nixl_integration/toy_proxy_server.py";
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM);
  ExpectGolden(RenderVllm(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, options), "vllm_prefill");
  ExpectGolden(RenderVllm(spec, v1::SIDE_DECODE, kEndpoints, kLogDir, options), "vllm_decode");
  ExpectGolden(RenderVllm(spec, v1::SIDE_ROUTER, kEndpoints, kLogDir, options), "vllm_router");
}

TEST(RendererGoldenTest, VllmRouterFromCommandArgv) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM);
  spec.mutable_deployment()->mutable_router()->add_command_argv("/usr/bin/python3");
  spec.mutable_deployment()->mutable_router()->add_command_argv("/opt/proxy.py");
  spec.mutable_deployment()->mutable_router()->add_command_argv("--port={port}");
  spec.mutable_deployment()->mutable_router()->add_command_argv("--decoder-ports={decode_port}");
  absl::StatusOr<core::LaunchCommand> c =
      RenderVllm(spec, v1::SIDE_ROUTER, kEndpoints, kLogDir, VllmOptions{});
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->argv, (std::vector<std::string>{"/usr/bin/python3", "/opt/proxy.py",
                                               "--port=8000", "--decoder-ports=8200",
                                               "--verbose"}));
}

TEST(RendererGoldenTest, VllmRejectsWhatItCannotExpress) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM);
  EXPECT_THAT(RenderVllm(spec, v1::SIDE_ROUTER, kEndpoints, kLogDir, VllmOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("deployment.router.command_argv")));
  spec.mutable_deployment()->mutable_decode()->set_expert_parallel(4);
  EXPECT_THAT(RenderVllm(spec, v1::SIDE_DECODE, kEndpoints, kLogDir, VllmOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("deployment.decode.expert_parallel")));
  spec = PdSpec(v1::ENGINE_VLLM);
  spec.mutable_deployment()->mutable_prefill()->mutable_expert_layout()->set_path("/l.json");
  EXPECT_THAT(RenderVllm(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, VllmOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("deployment.prefill.expert_layout")));
  spec = PdSpec(v1::ENGINE_VLLM);
  spec.mutable_deployment()->mutable_prefill()->clear_model();
  EXPECT_THAT(RenderVllm(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, VllmOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deployment.prefill.model")));
}

TEST(RendererGoldenTest, Sglang) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_SGLANG);
  SglangOptions options;
  ExpectGolden(RenderSglang(spec, v1::SIDE_PREFILL, kEndpoints, kLogDir, options), "sglang_prefill");
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

TEST(RendererGoldenTest, RouterNeedsUpstreamPorts) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_SGLANG);
  EXPECT_THAT(RenderSglang(spec, v1::SIDE_ROUTER, core::Endpoints{0, 8200, 8000}, kLogDir,
                           SglangOptions{}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("prefill port")));
}

TEST(RendererGoldenTest, PortRule) {
  v1::ExperimentSpec spec = PdSpec(v1::ENGINE_VLLM);
  // Endpoints win; then the spec's port; then a free port.
  spec.mutable_deployment()->mutable_prefill()->set_port(9100);
  absl::StatusOr<core::LaunchCommand> c =
      RenderVllm(spec, v1::SIDE_PREFILL, core::Endpoints{}, kLogDir, VllmOptions{});
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->port, 9100);
  c = RenderVllm(spec, v1::SIDE_DECODE, core::Endpoints{}, kLogDir, VllmOptions{});
  ASSERT_THAT(c, IsOk());
  EXPECT_GT(c->port, 0);
  EXPECT_NE(c->port, 9100);
  EXPECT_THAT(c->argv, ::testing::Contains(absl::StrCat(c->port)));
}

}  // namespace
}  // namespace servelab::engines
