// End to end with the real servelab-sim binary: render, launch, ready,
// scrape, reset, stop for prefill, decode and the router between them.
#include "daemon/engines/sim_engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <deque>

#include "daemon/engines/engine_factory.h"
#include "daemon/engines/http_client.h"
#include "daemon/engines/render_common.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::engines {
namespace {

using ::servelab::testing::BinPath;
using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::servelab::testing::TempDir;
using ::testing::Contains;
using ::testing::HasSubstr;

constexpr absl::Duration kReadyTimeout = absl::Seconds(30);

std::unique_ptr<core::InstanceDriver> MakeSim() {
  EngineOptions options;
  options.sim = {BinPath("servelab-sim"), 0.01};
  absl::StatusOr<std::unique_ptr<core::InstanceDriver>> engine =
      MakeEngine(v1::ENGINE_SIM, options);
  EXPECT_THAT(engine, IsOk());
  return engine.ok() ? *std::move(engine) : nullptr;
}

v1::ExperimentSpec SimSpec() {
  v1::ExperimentSpec spec;
  v1::DeploymentSpec& d = *spec.mutable_deployment();
  d.set_engine(v1::ENGINE_SIM);
  d.mutable_prefill()->set_model("sim-moe");
  d.mutable_prefill()->set_max_num_batched_tokens(4096);
  d.mutable_prefill()->set_max_num_seqs(32);
  d.mutable_decode()->set_model("sim-moe");
  d.mutable_decode()->set_max_num_seqs(64);
  d.mutable_decode()->add_extra_args("--seed");
  d.mutable_decode()->add_extra_args("7");
  return spec;
}

// Stops every launched instance at the end of a test, even a failing one.
class Instances {
 public:
  explicit Instances(core::InstanceDriver& engine) : engine_(engine) {}
  ~Instances() {
    for (const v1::ServingInstance& i : list_) (void)engine_.Stop(i, absl::Seconds(5));
  }
  const v1::ServingInstance& Add(v1::ServingInstance i) { return list_.emplace_back(std::move(i)); }
  const v1::ServingInstance& at(size_t i) const { return list_.at(i); }

 private:
  core::InstanceDriver& engine_;
  std::deque<v1::ServingInstance> list_;
};

TEST(SimEngineTest, RendersWhatTheSimAccepts) {
  std::unique_ptr<core::InstanceDriver> engine = MakeSim();
  ASSERT_NE(engine, nullptr);
  absl::StatusOr<core::LaunchCommand> c =
      engine->Render(SimSpec(), v1::SIDE_PREFILL, core::Endpoints{41000, 0, 0}, "/logs");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->argv,
            (std::vector<std::string>{BinPath("servelab-sim"), "--role", "prefill", "--host",
                                      "127.0.0.1", "--port", "41000", "--time-scale", "0.01",
                                      "--model", "sim-moe", "--config", "/logs/prefill.sim.yaml"}));
  EXPECT_EQ(c->port, 41000);
  EXPECT_EQ(c->log_path, "/logs/prefill.log");
  ASSERT_EQ(c->files.count("/logs/prefill.sim.yaml"), 1u);
  EXPECT_THAT(c->files.at("/logs/prefill.sim.yaml"), HasSubstr("max_num_seqs: 32\n"));
  EXPECT_THAT(c->files.at("/logs/prefill.sim.yaml"), HasSubstr("max_num_batched_tokens: 4096\n"));

  // Port 0 everywhere: a free port is chosen.
  c = engine->Render(SimSpec(), v1::SIDE_DECODE, core::Endpoints{}, "/logs");
  ASSERT_THAT(c, IsOk());
  EXPECT_GT(c->port, 0);
  EXPECT_EQ(c->argv.back(), "7");

  EXPECT_THAT(engine->Render(SimSpec(), v1::SIDE_ROUTER, core::Endpoints{41000, 0, 0}, "/logs"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("decode port")));
}

TEST(SimEngineTest, PrefillDecodeRouterEndToEnd) {
  TempDir dir;
  std::unique_ptr<core::InstanceDriver> engine = MakeSim();
  ASSERT_NE(engine, nullptr);
  Instances instances(*engine);
  v1::ExperimentSpec spec = SimSpec();
  core::Endpoints endpoints;

  for (v1::Side side : {v1::SIDE_PREFILL, v1::SIDE_DECODE, v1::SIDE_ROUTER}) {
    SCOPED_TRACE(SideLabel(side));
    absl::StatusOr<core::LaunchCommand> command = engine->Render(spec, side, endpoints, dir.path());
    ASSERT_THAT(command, IsOk());
    if (side == v1::SIDE_PREFILL) endpoints.prefill_port = command->port;
    if (side == v1::SIDE_DECODE) endpoints.decode_port = command->port;
    if (side == v1::SIDE_ROUTER) {
      EXPECT_THAT(command->argv, Contains(LoopbackUrl(endpoints.prefill_port)));
      EXPECT_THAT(command->argv, Contains(LoopbackUrl(endpoints.decode_port)));
    }
    absl::StatusOr<v1::ServingInstance> launched = engine->Launch(*command);
    ASSERT_THAT(launched, IsOk());
    const v1::ServingInstance& instance = instances.Add(*launched);
    if (side == v1::SIDE_ROUTER) endpoints.router_port = command->port;
    EXPECT_EQ(instance.side(), side);
    EXPECT_EQ(instance.port(), command->port);
    EXPECT_GT(instance.process_start_ticks(), 0);
    EXPECT_GT(instance.launched_at().seconds(), 0);
    EXPECT_EQ(engine->Alive(instance).value_or(false), true);
    EXPECT_EQ(getsid(instance.pid()), instance.pid());
    for (const auto& [path, content] : command->files) {
      EXPECT_EQ(testing::ReadFile(path), content);
    }

    ASSERT_THAT(engine->WaitReady(instance, absl::Now() + kReadyTimeout), IsOk());
    EXPECT_EQ(engine->BaseUrl(instance), LoopbackUrl(command->port));
    absl::StatusOr<core::InstanceCounters> counters = engine->Scrape(instance);
    ASSERT_THAT(counters, IsOk());
    EXPECT_EQ(counters->requests_running, 0);
    EXPECT_EQ(counters->requests_waiting, 0);
    EXPECT_THAT(engine->ResetPrefixCache(instance), IsOk());
  }

  // The sim applied the rendered config and model.
  absl::StatusOr<HttpResponse> models =
      HttpGet(endpoints.decode_port, "/v1/models", absl::Seconds(5));
  ASSERT_THAT(models, IsOk());
  EXPECT_THAT(models->body, HasSubstr("sim-moe"));

  // A request through the router moves both sides' counters.
  absl::StatusOr<HttpResponse> completion =
      HttpPost(endpoints.router_port, "/v1/completions",
               R"({"model":"sim-moe","prompt":"hello there","max_tokens":3})", absl::Seconds(10));
  ASSERT_THAT(completion, IsOk());
  EXPECT_EQ(completion->status, 200) << completion->body;
  const v1::ServingInstance& prefill = instances.at(0);
  const v1::ServingInstance& decode = instances.at(1);
  absl::StatusOr<core::InstanceCounters> p = engine->Scrape(prefill);
  absl::StatusOr<core::InstanceCounters> d = engine->Scrape(decode);
  ASSERT_THAT(p, IsOk());
  ASSERT_THAT(d, IsOk());
  EXPECT_GT(p->prompt_tokens, 0);
  EXPECT_GT(d->generation_tokens, 0);
  EXPECT_EQ(d->requests_running, 0);
}

TEST(SimEngineTest, StopAndNotAlive) {
  TempDir dir;
  std::unique_ptr<core::InstanceDriver> engine = MakeSim();
  ASSERT_NE(engine, nullptr);
  absl::StatusOr<core::LaunchCommand> command =
      engine->Render(SimSpec(), v1::SIDE_DECODE, core::Endpoints{}, dir.path());
  ASSERT_THAT(command, IsOk());
  absl::StatusOr<v1::ServingInstance> instance = engine->Launch(*command);
  ASSERT_THAT(instance, IsOk());
  ASSERT_THAT(engine->WaitReady(*instance, absl::Now() + kReadyTimeout), IsOk());
  EXPECT_THAT(engine->Stop(*instance, absl::Seconds(10)), IsOk());
  EXPECT_EQ(engine->Alive(*instance).value_or(true), false);
  EXPECT_THAT(engine->Scrape(*instance), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("")));
  // The sim logged its clean shutdown on SIGTERM.
  EXPECT_THAT(testing::ReadFile(instance->log_path()), HasSubstr("shutting down"));
}

TEST(SimEngineTest, ExitingProcessIsFailedPreconditionWithLogTail) {
  TempDir dir;
  std::unique_ptr<core::InstanceDriver> engine = MakeSim();
  ASSERT_NE(engine, nullptr);
  v1::ExperimentSpec spec = SimSpec();
  spec.mutable_deployment()->mutable_prefill()->add_extra_args("--no-such-flag");
  absl::StatusOr<core::LaunchCommand> command =
      engine->Render(spec, v1::SIDE_PREFILL, core::Endpoints{}, dir.path());
  ASSERT_THAT(command, IsOk());
  absl::StatusOr<v1::ServingInstance> instance = engine->Launch(*command);
  ASSERT_THAT(instance, IsOk());
  EXPECT_THAT(engine->WaitReady(*instance, absl::Now() + kReadyTimeout),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       ::testing::AllOf(HasSubstr("exited before it became ready"),
                                        HasSubstr("--no-such-flag"))));
  EXPECT_EQ(engine->Alive(*instance).value_or(true), false);
}

TEST(SimEngineTest, NotReadyByDeadline) {
  TempDir dir;
  std::unique_ptr<core::InstanceDriver> engine = MakeSim();
  ASSERT_NE(engine, nullptr);
  Instances instances(*engine);
  // A process that lives but never listens.
  core::LaunchCommand command;
  command.side = v1::SIDE_DECODE;
  command.argv = {"/bin/sleep", "100"};
  absl::StatusOr<int> port = PickFreeLoopbackPort();
  ASSERT_THAT(port, IsOk());
  command.port = *port;
  command.log_path = dir.File("sleep.log");
  absl::StatusOr<v1::ServingInstance> instance = engine->Launch(command);
  ASSERT_THAT(instance, IsOk());
  instances.Add(*instance);
  EXPECT_THAT(engine->WaitReady(*instance, absl::Now() + absl::Milliseconds(300)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("not ready")));
}

TEST(SimEngineTest, BadBinary) {
  EngineOptions options;
  options.sim = {"/nonexistent/servelab-sim", 0.01};
  absl::StatusOr<std::unique_ptr<core::InstanceDriver>> engine =
      MakeEngine(v1::ENGINE_SIM, options);
  ASSERT_THAT(engine, IsOk());
  // Found in preflight (Render), before anything is launched.
  EXPECT_THAT(
      (*engine)->Render(SimSpec(), v1::SIDE_PREFILL, core::Endpoints{}, "/tmp"),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("/nonexistent/servelab-sim")));
  // And Launch of such a command says so too.
  core::LaunchCommand command;
  command.argv = {"/nonexistent/servelab-sim"};
  TempDir dir;
  command.log_path = dir.File("x.log");
  EXPECT_THAT((*engine)->Launch(command),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("cannot execute")));

  options.sim = {"servelab-sim", 1};
  EXPECT_THAT(MakeEngine(v1::ENGINE_SIM, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("absolute")));
  EXPECT_THAT(MakeEngine(v1::ENGINE_UNSPECIFIED, EngineOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ENGINE_UNSPECIFIED")));
}

}  // namespace
}  // namespace servelab::engines
