// Black-box tests of servelab-engine-shim: the real binary as a subprocess,
// given the argv the daemon's renderers produce. Accepted invocations are
// checked through SERVELAB_SHIM_DRY_RUN=1 (the servelab-sim argv it would
// exec, one per line); rejected ones by exit code 2 and stderr. Port clashes
// use real binds on ports the test picks free.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab {
namespace {

using ::servelab::testing::BinPath;
using ::servelab::testing::FileExists;
using ::servelab::testing::Process;
using ::servelab::testing::ReadFile;
using ::servelab::testing::RunResult;
using ::servelab::testing::TempDir;
using ::servelab::testing::WaitFor;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// A socket bound (and listening) on 127.0.0.1:port, closed on destruction.
class Listener {
 public:
  explicit Listener(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && listen(fd_, 4) == 0;
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() { close(fd_); }
  bool ok() const { return ok_; }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  bool ok_ = false;
  int port_ = 0;
};

bool PortIsFree(int port) { return port > 0 && port < 65536 && Listener(port).ok(); }

// True once something accepts connections on 127.0.0.1:port. (Probing with a
// bind instead could steal the port from a server that is about to bind it.)
bool Accepting(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool connected = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return connected;
}

// A base port with `count` consecutive free ports, for side-channel ranges.
int FreePortRange(int count) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    int base = Listener(0).port();
    bool all_free = true;
    for (int i = 0; i < count && all_free; ++i) all_free = PortIsFree(base + i);
    if (all_free) return base;
  }
  ADD_FAILURE() << "no " << count << " consecutive free ports";
  return 0;
}

class EngineShimTest : public ::testing::Test {
 protected:
  RunResult Shim(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {BinPath("servelab-engine-shim")};
    argv.insert(argv.end(), args.begin(), args.end());
    env.push_back("SERVELAB_SHIM_DRY_RUN=1");
    env.push_back("TMPDIR=" + dir_.path());
    return testing::Run(argv, env, absl::Seconds(30));
  }

  // The printed sim argv; --config's temporary path is replaced by "CONFIG"
  // and its contents are kept in config_.
  std::vector<std::string> SimArgv(const RunResult& result) {
    std::vector<std::string> lines = absl::StrSplit(result.out, '\n', absl::SkipEmpty());
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
      if (lines[i] == "--config") {
        config_ = ReadFile(lines[i + 1]);
        lines[i + 1] = "CONFIG";
      }
    }
    return lines;
  }

  std::vector<std::string> Expected(std::vector<std::string> args) {
    args.insert(args.begin(), BinPath("servelab-sim"));
    return args;
  }

  TempDir dir_;
  std::string config_;
};

// --- Accepted invocations -------------------------------------------------

// vllm_renderer.cc's prefill argv (daemon/engines/testdata/vllm_prefill.golden).
TEST_F(EngineShimTest, VllmPrefillWithNixlBecomesASimPrefill) {
  int side_channel = FreePortRange(2);
  RunResult r = Shim({"serve",
                      "/models/moe",
                      "--host",
                      "127.0.0.1",
                      "--port",
                      "8100",
                      "--tensor-parallel-size",
                      "4",
                      "--data-parallel-size",
                      "2",
                      "--enable-expert-parallel",
                      "--max-num-batched-tokens",
                      "16384",
                      "--max-num-seqs",
                      "64",
                      "--max-model-len",
                      "163840",
                      "--enable-prompt-tokens-details",
                      "--kv-transfer-config",
                      R"({"kv_connector":"NixlConnector","kv_role":"kv_producer"})",
                      "--trust-remote-code"},
                     {"VLLM_NIXL_SIDE_CHANNEL_HOST=127.0.0.1",
                      absl::StrCat("VLLM_NIXL_SIDE_CHANNEL_PORT=", side_channel),
                      "SERVELAB_SIM_TIME_SCALE=0.01", "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(
      SimArgv(r),
      ElementsAreArray(Expected({"--compat", "vllm", "--role", "prefill", "--host", "127.0.0.1",
                                 "--port", "8100", "--time-scale", "0.01", "--model", "/models/moe",
                                 "--enable-prompt-tokens-details", "--config", "CONFIG"})));
  EXPECT_THAT(config_, HasSubstr("max_model_len: 163840\n"));
  EXPECT_THAT(config_, HasSubstr("max_num_batched_tokens: 16384\n"));
  EXPECT_THAT(config_, HasSubstr("max_num_seqs: 64\n"));
}

TEST_F(EngineShimTest, VllmDecodeUsesTheServedModelNameAndPromptTokenDetails) {
  int side_channel = FreePortRange(1);
  RunResult r =
      Shim({"serve", "/models/moe", "--port", "8200", "--served-model-name", "moe", "alias",
            "--kv-transfer-config", R"({"kv_connector":"NixlConnector","kv_role":"kv_consumer"})",
            "--enable-prompt-tokens-details", "--max-model-len", "16k"},
           {"VLLM_NIXL_SIDE_CHANNEL_HOST=127.0.0.1",
            absl::StrCat("VLLM_NIXL_SIDE_CHANNEL_PORT=", side_channel)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(
      SimArgv(r),
      ElementsAreArray(Expected({"--compat", "vllm", "--role", "decode", "--host", "127.0.0.1",
                                 "--port", "8200", "--time-scale", "1", "--model", "moe",
                                 "--enable-prompt-tokens-details", "--config", "CONFIG"})));
  EXPECT_EQ(config_.substr(config_.find('\n') + 1), "max_model_len: 16000\n");
}

TEST_F(EngineShimTest, VllmWithoutKvTransferIsUnified) {
  RunResult r = Shim({"serve", "/models/small", "--port", "8300"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(SimArgv(r),
              ElementsAreArray(
                  Expected({"--compat", "vllm", "--role", "unified", "--host", "127.0.0.1",
                            "--port", "8300", "--time-scale", "1", "--model", "/models/small"})));
}

// vllm_renderer.cc's vllm-ascend prefill argv (testdata/vllm_ascend_prefill.golden),
// with the kv_port moved to a free range (DP 2 x TP 4 = 8 handshake ports).
std::string MooncakeConfig(const std::string& role, int kv_port) {
  return absl::StrCat(
      R"({"kv_connector":"MooncakeConnectorV1","kv_role":")", role, R"(","kv_port":")", kv_port,
      R"(","engine_id":"0","kv_connector_module_path":)",
      R"("vllm_ascend.distributed.mooncake_connector","kv_connector_extra_config":)",
      R"({"prefill":{"dp_size":2,"tp_size":4},"decode":{"dp_size":8,"tp_size":1}}})");
}

TEST_F(EngineShimTest, VllmAscendMooncakePrefillBecomesASimPrefill) {
  int kv_port = FreePortRange(8);
  RunResult r = Shim({"serve",
                      "/models/moe",
                      "--host",
                      "127.0.0.1",
                      "--port",
                      "8100",
                      "--tensor-parallel-size",
                      "4",
                      "--data-parallel-size",
                      "2",
                      "--enable-expert-parallel",
                      "--max-num-batched-tokens",
                      "16384",
                      "--max-num-seqs",
                      "64",
                      "--max-model-len",
                      "163840",
                      "--gpu-memory-utilization",
                      "0.9",
                      "--quantization",
                      "ascend",
                      "--enable-prompt-tokens-details",
                      "--kv-transfer-config",
                      MooncakeConfig("kv_producer", kv_port),
                      "--trust-remote-code"},
                     {"ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "HCCL_IF_IP=127.0.0.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(SimArgv(r),
              ElementsAreArray(
                  Expected({"--compat", "vllm-ascend", "--role", "prefill", "--host", "127.0.0.1",
                            "--port", "8100", "--time-scale", "1", "--model", "/models/moe",
                            "--enable-prompt-tokens-details", "--config", "CONFIG"})));
}

// A Mooncake producer holds kv_port + local DP rank * TP + TP rank.
TEST_F(EngineShimTest, MooncakeProducerHoldsItsHandshakePorts) {
  int kv_port = FreePortRange(8);
  Listener taken(kv_port + 7);  // local DP rank 1, TP rank 3
  ASSERT_TRUE(taken.ok());
  RunResult r = Shim({"serve", "/models/moe", "--tensor-parallel-size", "4", "--data-parallel-size",
                      "2", "--kv-transfer-config", MooncakeConfig("kv_producer", kv_port)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat(
                         "cannot bind 127.0.0.1:", kv_port + 7,
                         " (Mooncake handshake port of local DP rank 1 TP rank 3): Address "
                         "already in use")));
  // A consumer only connects: the same ports are no obstacle.
  r = Shim({"serve", "/models/moe", "--port", "8200", "--data-parallel-size", "8",
            "--data-parallel-rank", "0", "--kv-transfer-config",
            MooncakeConfig("kv_consumer", kv_port + 7)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(SimArgv(r), ElementsAreArray(Expected(
                              {"--compat", "vllm-ascend", "--role", "decode", "--host", "127.0.0.1",
                               "--port", "8200", "--time-scale", "1", "--model", "/models/moe"})));
}

// sglang_renderer.cc's prefill argv (testdata/sglang_prefill.golden) with a free
// bootstrap port.
TEST_F(EngineShimTest, SglangPrefillBecomesASimPrefill) {
  int bootstrap = FreePortRange(1);
  RunResult r = Shim({"-m",
                      "sglang.launch_server",
                      "--model-path",
                      "/models/moe",
                      "--host",
                      "127.0.0.1",
                      "--port",
                      "8100",
                      "--disaggregation-mode",
                      "prefill",
                      "--disaggregation-transfer-backend",
                      "mooncake",
                      "--disaggregation-bootstrap-port",
                      absl::StrCat(bootstrap),
                      "--tp-size",
                      "8",
                      "--dp-size",
                      "2",
                      "--enable-dp-attention",
                      "--ep-size",
                      "8",
                      "--chunked-prefill-size",
                      "16384",
                      "--max-running-requests",
                      "64",
                      "--context-length",
                      "163840",
                      "--enable-metrics",
                      "--enable-cache-report",
                      "--trust-remote-code"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(SimArgv(r),
              ElementsAreArray(
                  Expected({"--compat", "sglang", "--role", "prefill", "--host", "127.0.0.1",
                            "--port", "8100", "--time-scale", "1", "--model", "/models/moe",
                            "--enable-cache-report", "--enable-metrics", "--config", "CONFIG"})));
  EXPECT_THAT(config_, HasSubstr("max_num_seqs: 64\n"));
}

// testdata/sglang_decode.golden plus --served-model-name.
TEST_F(EngineShimTest, SglangDecodeWithServedModelName) {
  RunResult r = Shim({"-m",
                      "sglang.launch_server",
                      "--model-path",
                      "/models/moe",
                      "--served-model-name",
                      "moe",
                      "--host",
                      "127.0.0.1",
                      "--port",
                      "8200",
                      "--disaggregation-mode",
                      "decode",
                      "--disaggregation-transfer-backend",
                      "mooncake",
                      "--tp-size",
                      "8",
                      "--dp-size",
                      "8",
                      "--enable-dp-attention",
                      "--ep-size",
                      "8",
                      "--max-running-requests",
                      "128",
                      "--context-length",
                      "163840",
                      "--init-expert-location",
                      "/layouts/decode-fitted.json",
                      "--ep-dispatch-algorithm",
                      "static",
                      "--enable-metrics",
                      "--enable-cache-report"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(SimArgv(r),
              ElementsAreArray(
                  Expected({"--compat", "sglang", "--role", "decode", "--host", "127.0.0.1",
                            "--port", "8200", "--time-scale", "1", "--model", "moe",
                            "--enable-cache-report", "--enable-metrics", "--config", "CONFIG"})));
  EXPECT_THAT(config_, HasSubstr("max_num_seqs: 128\n"));
}

// testdata/sglang_router.golden with a second prefill.
TEST_F(EngineShimTest, SglangRouterGetsOneUrlPerUpstream) {
  RunResult r =
      Shim({"-m", "sglang_router.launch_router", "--pd-disaggregation", "--prefill",
            "http://127.0.0.1:8100", "8998", "--prefill", "http://127.0.0.1:8101", "--decode",
            "http://127.0.0.1:8200", "--host", "127.0.0.1", "--port", "8000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(
      SimArgv(r),
      ElementsAreArray(Expected({"--compat", "sglang", "--role", "router", "--host", "127.0.0.1",
                                 "--port", "8000", "--time-scale", "1", "--prefill-url",
                                 "http://127.0.0.1:8100", "--prefill-url", "http://127.0.0.1:8101",
                                 "--decode-url", "http://127.0.0.1:8200"})));
}

// vllm_renderer.cc's router argv (testdata/vllm_router.golden).
TEST_F(EngineShimTest, VllmToyProxyBecomesASimRouter) {
  RunResult r =
      Shim({"/opt/vllm/tests/v1/kv_connector/nixl_integration/toy_proxy_server.py", "--host",
            "127.0.0.1", "--port", "8000", "--prefiller-host", "127.0.0.1", "--prefiller-port",
            "8100", "--decoder-host", "127.0.0.1", "--decoder-port", "8200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(SimArgv(r), ElementsAreArray(Expected(
                              {"--compat", "vllm", "--role", "router", "--host", "127.0.0.1",
                               "--port", "8000", "--time-scale", "1", "--prefill-url",
                               "http://127.0.0.1:8100", "--decode-url", "http://127.0.0.1:8200"})));
}

// testdata/vllm_ascend_router.golden, shortened to two decoders.
TEST_F(EngineShimTest, VllmAscendLbProxyTakesLists) {
  RunResult r =
      Shim({"/opt/vllm-ascend/examples/disaggregated_prefill_v1/"
            "load_balance_proxy_server_example.py",
            "--host", "127.0.0.1", "--port", "9000", "--prefiller-hosts", "127.0.0.1",
            "--prefiller-ports", "8100", "--decoder-hosts", "127.0.0.1", "127.0.0.1",
            "--decoder-ports", "8200", "8201"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(SimArgv(r), ElementsAreArray(Expected(
                              {"--compat", "vllm-ascend", "--role", "router", "--host", "127.0.0.1",
                               "--port", "9000", "--time-scale", "1", "--prefill-url",
                               "http://127.0.0.1:8100", "--decode-url", "http://127.0.0.1:8200",
                               "--decode-url", "http://127.0.0.1:8201"})));
}

// --- Rejected invocations -------------------------------------------------

TEST_F(EngineShimTest, UnknownInvocationExits2) {
  RunResult r = Shim({"-m", "vllm.entrypoints.api_server", "--port", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("not an engine invocation the shim knows"));
}

TEST_F(EngineShimTest, UnknownFlagIsRejected) {
  RunResult r = Shim({"serve", "/m", "--port", "8000", "--max-batch", "4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("vllm serve 0.11.1 has no flag --max-batch"));
}

TEST_F(EngineShimTest, FlagTheVersionLacksIsRejected) {
  RunResult r = Shim({"serve", "/m", "--prefill-context-parallel-size", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("has no flag --prefill-context-parallel-size"));
}

TEST_F(EngineShimTest, ToyProxyRejectsVerbose) {
  RunResult r = Shim({"/x/toy_proxy_server.py", "--port", "8000", "--verbose"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("vllm toy_proxy 0.11.1 has no flag --verbose"));
}

TEST_F(EngineShimTest, ToyProxyRejectsUnpairedHostsAndPorts) {
  RunResult r = Shim({"/x/toy_proxy_server.py", "--prefiller-hosts", "127.0.0.1", "127.0.0.1",
                      "--prefiller-ports", "8100"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("Number of prefiller hosts must match number of prefiller ports"));
}

TEST_F(EngineShimTest, BadKvTransferJsonIsRejected) {
  RunResult r = Shim({"serve", "/m", "--kv-transfer-config", "{kv_connector:NixlConnector}"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--kv-transfer-config: \"{kv_connector:NixlConnector}\" is not "
                               "valid JSON"));
}

TEST_F(EngineShimTest, BadKvRoleIsRejected) {
  RunResult r = Shim({"serve", "/m", "--kv-transfer-config",
                      R"({"kv_connector":"NixlConnector","kv_role":"producer"})"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("Unsupported kv_role: producer"));
  r = Shim({"serve", "/m", "--kv-transfer-config", R"({"kv_connector":"NixlConnector"})"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("Please specify kv_role when kv_connector is set"));
}

TEST_F(EngineShimTest, MissingNixlEnvironmentIsRejected) {
  const std::string kv = R"({"kv_connector":"NixlConnector","kv_role":"kv_producer"})";
  RunResult r = Shim({"serve", "/m", "--kv-transfer-config", kv});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("NixlConnector needs VLLM_NIXL_SIDE_CHANNEL_PORT"));
  r = Shim({"serve", "/m", "--kv-transfer-config", kv}, {"VLLM_NIXL_SIDE_CHANNEL_PORT=5600x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("VLLM_NIXL_SIDE_CHANNEL_PORT=5600x is not a port"));
  r = Shim({"serve", "/m", "--kv-transfer-config", kv},
           {absl::StrCat("VLLM_NIXL_SIDE_CHANNEL_PORT=", FreePortRange(1))});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("NixlConnector needs VLLM_NIXL_SIDE_CHANNEL_HOST"));
}

TEST_F(EngineShimTest, NonLoopbackSideChannelHostIsRefused) {
  RunResult r = Shim({"serve", "/m", "--kv-transfer-config",
                      R"({"kv_connector":"NixlConnector","kv_role":"kv_consumer"})"},
                     {"VLLM_NIXL_SIDE_CHANNEL_HOST=0.0.0.0",
                      absl::StrCat("VLLM_NIXL_SIDE_CHANNEL_PORT=", FreePortRange(1))});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("VLLM_NIXL_SIDE_CHANNEL_HOST=0.0.0.0: the engine shim binds side "
                               "channels on 127.0.0.1 only"));
}

TEST_F(EngineShimTest, NonLoopbackHttpHostIsRefused) {
  RunResult r = Shim({"serve", "/m", "--host", "0.0.0.0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--host 0.0.0.0: the engine shim serves on 127.0.0.1 only"));
}

TEST_F(EngineShimTest, MooncakeWithoutPrefillDecodeSizesIsRejected) {
  RunResult r = Shim({"serve", "/m", "--kv-transfer-config",
                      R"({"kv_connector":"MooncakeConnector","kv_role":"kv_consumer",)"
                      R"("kv_port":20001,"kv_connector_extra_config":{"prefill":{"dp_size":1,)"
                      R"("tp_size":2},"decode":{"dp_size":1}}})"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("kv_connector_extra_config.decode.tp_size is required"));
  r = Shim({"serve", "/m", "--kv-transfer-config",
            R"({"kv_connector":"MooncakeConnector","kv_role":"kv_consumer",)"
            R"("kv_connector_extra_config":{"prefill":{"dp_size":1,"tp_size":2},)"
            R"("decode":{"dp_size":1,"tp_size":2}}})"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("MooncakeConnector needs kv_port"));
}

TEST_F(EngineShimTest, SglangEpThatDoesNotDivideTpIsRejected) {
  RunResult r = Shim({"-m", "sglang.launch_server", "--model-path", "/m", "--tp-size", "4",
                      "--dp-size", "2", "--ep-size", "8"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--ep-size 8 must divide --tp-size 4"));
  r = Shim(
      {"-m", "sglang.launch_server", "--model-path", "/m", "--tp-size", "4", "--ep-size", "3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--ep-size 3 must divide --tp-size 4"));
}

TEST_F(EngineShimTest, SglangDpAttentionNeedsTpDivisibleByDp) {
  RunResult r = Shim({"-m", "sglang.launch_server", "--model-path", "/m", "--tp-size", "4",
                      "--dp-size", "3", "--enable-dp-attention"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--tp-size 4 must be divisible by --dp-size 3"));
}

TEST_F(EngineShimTest, SglangRequiresModelPathAndValidChoices) {
  RunResult r = Shim({"-m", "sglang.launch_server", "--port", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("the following arguments are required: --model-path"));
  r = Shim({"-m", "sglang.launch_server", "--model-path", "/m", "--disaggregation-mode", "both"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("is not one of null, prefill, decode"));
}

TEST_F(EngineShimTest, SglangRouterNeedsPdUrls) {
  RunResult r = Shim({"-m", "sglang_router.launch_router", "--pd-disaggregation", "--decode",
                      "http://127.0.0.1:8200"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("PD disaggregation mode requires --prefill"));
  r = Shim({"-m", "sglang_router.launch_router", "--pd-disaggregation", "--prefill",
            "http://127.0.0.1:8100", "port", "--decode", "http://127.0.0.1:8200"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("Invalid bootstrap port: port. Must be a number or 'none'"));
}

TEST_F(EngineShimTest, UnknownVersionListsTheKnownOnes) {
  RunResult r = Shim({"serve", "/m"}, {"SERVELAB_ENGINE_VERSION=0.6.0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no flag table for vllm serve version 0.6.0; known versions: "
                               "0.11.1"));
}

// --- Real binds ---------------------------------------------------------------

TEST_F(EngineShimTest, OverlappingNixlSideChannelRangesFailTheSecondInstance) {
  int base = FreePortRange(3);
  const std::string kv = R"({"kv_connector":"NixlConnector","kv_role":"kv_producer"})";
  // The first instance (DP 2) holds base and base+1 until it is stopped.
  Process first({BinPath("servelab-engine-shim"), "serve", "/m", "--port", "8100",
                 "--data-parallel-size", "2", "--kv-transfer-config", kv},
                dir_.File("first"),
                {"SERVELAB_SHIM_DRY_RUN=hold", "TMPDIR=" + dir_.path(),
                 "VLLM_NIXL_SIDE_CHANNEL_HOST=127.0.0.1",
                 absl::StrCat("VLLM_NIXL_SIDE_CHANNEL_PORT=", base)});
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(dir_.File("first.out")).empty(); }, absl::Seconds(10)))
      << ReadFile(dir_.File("first.err"));
  EXPECT_FALSE(PortIsFree(base));
  EXPECT_FALSE(PortIsFree(base + 1));

  // The second instance's range starts at base+1.
  RunResult second = Shim(
      {"serve", "/m", "--port", "8200", "--data-parallel-size", "2", "--kv-transfer-config", kv},
      {"VLLM_NIXL_SIDE_CHANNEL_HOST=127.0.0.1",
       absl::StrCat("VLLM_NIXL_SIDE_CHANNEL_PORT=", base + 1)});
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_THAT(second.err, HasSubstr(absl::StrCat("cannot bind 127.0.0.1:", base + 1,
                                                 " (NIXL side channel of DP rank 0): Address "
                                                 "already in use")));
  // What the second one bound before failing is released again.
  EXPECT_TRUE(PortIsFree(base + 2));

  first.Signal(SIGTERM);
  EXPECT_EQ(first.Wait(), 0);
  EXPECT_TRUE(PortIsFree(base));
}

TEST_F(EngineShimTest, SglangPrefillBootstrapPortInUseFails) {
  Listener taken(0);
  ASSERT_TRUE(taken.ok());
  RunResult r = Shim({"-m", "sglang.launch_server", "--model-path", "/m", "--disaggregation-mode",
                      "prefill", "--disaggregation-bootstrap-port", absl::StrCat(taken.port())});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("(SGLang bootstrap server): Address already in use"));
}

// Without the dry run the shim execs servelab-sim, which inherits the bound
// side-channel sockets. Needs the sim's --compat flag (added alongside).
TEST_F(EngineShimTest, ExecsTheSimWhichKeepsTheSideChannelBound) {
  RunResult help = testing::Run({BinPath("servelab-sim"), "--help"});
  if (help.out.find("--compat") == std::string::npos) {
    GTEST_SKIP() << "servelab-sim has no --compat yet";
  }
  int side_channel = FreePortRange(1);
  int http = FreePortRange(1);
  Process shim(
      {BinPath("servelab-engine-shim"), "serve", "/m", "--port", absl::StrCat(http),
       "--max-num-seqs", "8", "--kv-transfer-config",
       R"({"kv_connector":"NixlConnector","kv_role":"kv_producer"})"},
      dir_.File("exec"),
      {"TMPDIR=" + dir_.path(), "VLLM_NIXL_SIDE_CHANNEL_HOST=127.0.0.1",
       absl::StrCat("VLLM_NIXL_SIDE_CHANNEL_PORT=", side_channel), "SERVELAB_SIM_TIME_SCALE=0.01"});
  ASSERT_TRUE(WaitFor([&] { return Accepting(http) || !shim.Running(); }, absl::Seconds(20)))
      << ReadFile(dir_.File("exec.err"));
  ASSERT_TRUE(shim.Running()) << ReadFile(dir_.File("exec.err"));
  EXPECT_FALSE(PortIsFree(side_channel));
  std::string cmdline = ReadFile(absl::StrCat("/proc/", shim.pid(), "/cmdline"));
  EXPECT_THAT(cmdline, HasSubstr("servelab-sim"));
  // The capacity config went over an unlinked, inherited descriptor.
  EXPECT_THAT(cmdline, HasSubstr("/dev/fd/"));
  shim.Signal(SIGTERM);
  EXPECT_EQ(shim.Wait(), 0) << ReadFile(dir_.File("exec.err"));
}

}  // namespace
}  // namespace servelab
