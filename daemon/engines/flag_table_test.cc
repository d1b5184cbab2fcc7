#include "daemon/engines/flag_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "tests/testing/status_matchers.h"

namespace servelab::engines {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const FlagTable& Table(std::string_view tool, std::string_view version = "") {
  absl::StatusOr<const FlagTable*> table = FindFlagTable(tool, version);
  EXPECT_THAT(table, IsOk());
  return **table;
}

absl::StatusOr<ParsedArgs> Parse(std::string_view tool, const std::vector<std::string>& args) {
  return ParseFlags(Table(tool), args);
}

TEST(FindFlagTableTest, EveryToolHasATableThatCitesItsSource) {
  for (std::string_view tool : {"vllm serve", "vllm-ascend serve", "vllm toy_proxy",
                                "vllm-ascend lb_proxy", "sglang launch_server", "sglang router"}) {
    const FlagTable& table = Table(tool);
    EXPECT_EQ(table.tool, tool);
    EXPECT_FALSE(table.version.empty()) << tool;
    EXPECT_FALSE(table.source.empty()) << tool;
    EXPECT_FALSE(table.flags.empty()) << tool;
    EXPECT_THAT(KnownVersions(tool), ::testing::Contains(table.version));
  }
}

TEST(FindFlagTableTest, EmptyVersionIsTheNewestAndAnExactVersionIsFound) {
  EXPECT_EQ(Table("vllm serve").version, "0.11.1");
  EXPECT_EQ(Table("vllm serve", "0.11.1").version, "0.11.1");
  EXPECT_EQ(Table("vllm-ascend serve", "0.11.0rc0").version, "0.11.0rc0");
  EXPECT_EQ(Table("sglang launch_server", "0.5.5").version, "0.5.5");
}

TEST(FindFlagTableTest, UnknownVersionListsTheKnownVersions) {
  EXPECT_THAT(FindFlagTable("vllm serve", "0.6.0"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("no flag table for vllm serve version 0.6.0; known versions: "
                                 "0.11.1")));
}

TEST(FindFlagTableTest, UnknownToolListsTheKnownTools) {
  EXPECT_THAT(FindFlagTable("trtllm serve", ""),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("no flag table for tool \"trtllm serve\""),
                             HasSubstr("vllm serve"), HasSubstr("sglang router"))));
  EXPECT_THAT(KnownVersions("trtllm serve"), IsEmpty());
}

TEST(FlagTableDataTest, NoTableDeclaresAFlagTwice) {
  for (std::string_view tool : KnownTools()) {
    for (std::string_view version : KnownVersions(tool)) {
      const FlagTable& table = Table(tool, version);
      std::set<std::string_view> seen;
      for (const FlagSpec& spec : table.flags) {
        EXPECT_TRUE(seen.insert(spec.name).second) << tool << " " << version << " " << spec.name;
        for (std::string_view alias : spec.aliases) {
          EXPECT_TRUE(seen.insert(alias).second) << tool << " " << version << " " << alias;
        }
        EXPECT_EQ(spec.value == FlagValue::kChoice,
                  !spec.choices.empty() && spec.value != FlagValue::kList)
            << spec.name;
      }
    }
  }
}

// The argv vllm_renderer.cc renders for a prefill instance (testdata/vllm_prefill.golden)
// plus every other flag the daemon may render.
TEST(ParseFlagsTest, TheFlagsTheDaemonRendersForVllmParse) {
  absl::StatusOr<ParsedArgs> args =
      Parse("vllm serve", {"/models/moe",
                           "--host",
                           "127.0.0.1",
                           "--port",
                           "8100",
                           "--served-model-name",
                           "moe",
                           "--tensor-parallel-size",
                           "4",
                           "--data-parallel-size",
                           "2",
                           "--data-parallel-rank",
                           "0",
                           "--data-parallel-size-local",
                           "2",
                           "--data-parallel-start-rank",
                           "0",
                           "--data-parallel-address",
                           "127.0.0.1",
                           "--data-parallel-rpc-port",
                           "9100",
                           "--enable-expert-parallel",
                           "--max-num-batched-tokens",
                           "16384",
                           "--max-num-seqs",
                           "64",
                           "--max-model-len",
                           "163840",
                           "--gpu-memory-utilization",
                           "0.9",
                           "--kv-transfer-config",
                           R"({"kv_connector":"NixlConnector","kv_role":"kv_producer"})",
                           "--enable-prompt-tokens-details",
                           "--quantization",
                           "fp8",
                           "--additional-config",
                           R"({"ascend_scheduler_config":{"enabled":true}})",
                           "--trust-remote-code",
                           "--enforce-eager",
                           "--seed",
                           "1024",
                           "--no-enable-prefix-caching",
                           "--decode-context-parallel-size",
                           "2"});
  ASSERT_THAT(args, IsOk());
  EXPECT_THAT(args->positionals, ElementsAre("/models/moe"));
  EXPECT_THAT(args->flags.at("--port"), ElementsAre("8100"));
  EXPECT_THAT(args->flags.at("--enable-expert-parallel"), IsEmpty());
  EXPECT_TRUE(args->Has("--no-enable-prefix-caching"));
  EXPECT_EQ(args->Last("--kv-transfer-config"),
            R"({"kv_connector":"NixlConnector","kv_role":"kv_producer"})");
  EXPECT_THAT(Parse("vllm serve", {"m", "--enable-prefix-caching"}), IsOk());
  EXPECT_THAT(Parse("vllm-ascend serve", {"m", "--additional-config", "{}"}), IsOk());
}

TEST(ParseFlagsTest, AFlagThatVersionLacksIsRejected) {
  // Prefill context parallelism came to vLLM after this version.
  EXPECT_THAT(Parse("vllm serve", {"m", "--prefill-context-parallel-size", "2"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vllm serve 0.11.1 has no flag --prefill-context-parallel-size")));
}

TEST(ParseFlagsTest, UnknownFlagNamesTheToolAndVersion) {
  EXPECT_THAT(Parse("vllm serve", {"m", "--verbose"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vllm serve 0.11.1 has no flag --verbose")));
}

TEST(ParseFlagsTest, ToyProxyHasNoVerbose) {
  EXPECT_THAT(Parse("vllm toy_proxy", {"--port", "8000", "--verbose"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vllm toy_proxy 0.11.1 has no flag --verbose")));
}

TEST(ParseFlagsTest, MissingValueIsRejected) {
  EXPECT_THAT(Parse("vllm serve", {"m", "--max-num-seqs"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--max-num-seqs: expected one argument (vllm serve 0.11.1)")));
  EXPECT_THAT(Parse("vllm serve", {"m", "--max-num-seqs", "--enforce-eager"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--max-num-seqs: expected one argument")));
  EXPECT_THAT(Parse("vllm toy_proxy", {"--prefiller-hosts", "--port", "1"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--prefiller-hosts: expected at least one argument")));
}

TEST(ParseFlagsTest, NonIntegerIsRejected) {
  EXPECT_THAT(Parse("vllm serve", {"m", "--max-num-seqs", "abc"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--max-num-seqs: \"abc\" is not an integer (vllm serve 0.11.1)")));
  EXPECT_THAT(Parse("sglang launch_server", {"--tp-size", "2.5"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--tp-size: \"2.5\" is not an integer")));
}

TEST(ParseFlagsTest, NonNumberIsRejectedForFloats) {
  EXPECT_THAT(Parse("vllm serve", {"m", "--gpu-memory-utilization", "most"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--gpu-memory-utilization: \"most\" is not a number")));
  EXPECT_THAT(Parse("vllm serve", {"m", "--gpu-memory-utilization", "1e-1"}), IsOk());
}

TEST(ParseFlagsTest, InvalidJsonIsRejected) {
  EXPECT_THAT(Parse("vllm serve", {"m", "--kv-transfer-config", "{kv_connector: Nixl}"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--kv-transfer-config: \"{kv_connector: Nixl}\" is not valid "
                                 "JSON (vllm serve 0.11.1)")));
}

TEST(ParseFlagsTest, ValueNotInChoicesIsRejected) {
  EXPECT_THAT(
      Parse("sglang launch_server", {"--disaggregation-mode", "both"}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("--disaggregation-mode: \"both\" is not one of null, prefill, decode "
                         "(sglang launch_server 0.5.5)")));
  EXPECT_THAT(Parse("sglang launch_server", {"--disaggregation-transfer-backend", "ucx"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not one of mooncake, nixl, ascend, fake")));
}

TEST(ParseFlagsTest, WrongPositionalCountIsRejected) {
  EXPECT_THAT(Parse("vllm serve", {"--port", "8000"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vllm serve 0.11.1 takes 1 positional argument(s), got 0")));
  EXPECT_THAT(Parse("vllm serve", {"a", "b"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got 2: a b")));
  EXPECT_THAT(Parse("vllm toy_proxy", {"extra"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vllm toy_proxy 0.11.1 takes 0 positional argument(s), got 1")));
}

TEST(ParseFlagsTest, ValueOnAFlagThatTakesNoneIsRejected) {
  EXPECT_THAT(Parse("vllm serve", {"m", "--enforce-eager=true"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--enforce-eager takes no value, got \"true\"")));
}

TEST(ParseFlagsTest, AmbiguousPrefixIsRejected) {
  EXPECT_THAT(Parse("vllm serve", {"m", "--max-num", "4"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--max-num is ambiguous")));
}

TEST(ParseFlagsTest, APrefixOfAFlagAndItsAliasIsOneMatch) {
  absl::StatusOr<ParsedArgs> args = Parse("vllm toy_proxy", {"--prefiller-h", "127.0.0.1"});
  ASSERT_THAT(args, IsOk());
  EXPECT_THAT(args->flags.at("--prefiller-hosts"), ElementsAre("127.0.0.1"));
  EXPECT_THAT(Parse("sglang launch_server", {"--model-path", "m", "--pp", "2"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--pp is ambiguous")));
}

TEST(ParseFlagsTest, ArgparseFormsAreAccepted) {
  absl::StatusOr<ParsedArgs> args = Parse(
      "vllm serve", {"m", "--port=8100", "-tp", "2", "-dp=4", "--seed", "-1", "--max-model-len",
                     "16k", "--max-num-batched-tokens", "1K", "-O3", "--tensor-parallel", "4"});
  ASSERT_THAT(args, IsOk());
  EXPECT_THAT(args->flags.at("--port"), ElementsAre("8100"));
  EXPECT_THAT(args->flags.at("--tensor-parallel-size"), ElementsAre("2", "4"));
  EXPECT_EQ(args->Last("--tensor-parallel-size"), "4");
  EXPECT_THAT(args->flags.at("--data-parallel-size"), ElementsAre("4"));
  EXPECT_THAT(args->flags.at("--seed"), ElementsAre("-1"));
  EXPECT_THAT(args->flags.at("--compilation-config"), ElementsAre("3"));
  EXPECT_THAT(Parse("vllm serve", {"m", "--max-model-len", "1.5K"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not an integer")));
  // `--` ends the options.
  args = Parse("vllm serve", {"--port", "1", "--", "--model-named-like-a-flag"});
  ASSERT_THAT(args, IsOk());
  EXPECT_THAT(args->positionals, ElementsAre("--model-named-like-a-flag"));
}

TEST(ParseFlagsTest, VllmAcceptsUnderscoresButSglangDoesNot) {
  absl::StatusOr<ParsedArgs> args = Parse("vllm serve", {"m", "--max_num_seqs", "8"});
  ASSERT_THAT(args, IsOk());
  EXPECT_THAT(args->flags.at("--max-num-seqs"), ElementsAre("8"));
  EXPECT_THAT(Parse("sglang launch_server", {"--tp_size", "2"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("sglang launch_server 0.5.5 has no flag --tp_size")));
  EXPECT_THAT(Parse("vllm toy_proxy", {"--prefiller_port", "1"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has no flag")));
}

TEST(ParseFlagsTest, VllmDottedJsonKeysAreKeptUnderTheDottedKey) {
  absl::StatusOr<ParsedArgs> args =
      Parse("vllm serve", {"m", "--kv-transfer-config.kv_role", "kv_consumer"});
  ASSERT_THAT(args, IsOk());
  EXPECT_THAT(args->flags.at("--kv-transfer-config.kv_role"), ElementsAre("kv_consumer"));
}

TEST(ParseFlagsTest, ToyProxyArgvOfTheDaemonParsesIntoThePluralFlags) {
  absl::StatusOr<ParsedArgs> args =
      Parse("vllm toy_proxy",
            {"--host", "127.0.0.1", "--port", "8000", "--prefiller-host", "127.0.0.1",
             "--prefiller-port", "8100", "--decoder-host", "127.0.0.1", "--decoder-port", "8200"});
  ASSERT_THAT(args, IsOk());
  EXPECT_THAT(args->flags.at("--prefiller-ports"), ElementsAre("8100"));
  EXPECT_THAT(args->flags.at("--decoder-hosts"), ElementsAre("127.0.0.1"));
}

TEST(ParseFlagsTest, LbProxyTakesLists) {
  absl::StatusOr<ParsedArgs> args =
      Parse("vllm-ascend lb_proxy", {"--host", "127.0.0.1", "--port", "9000", "--prefiller-hosts",
                                     "127.0.0.1", "127.0.0.1", "--prefiller-ports", "8100", "8101",
                                     "--decoder-hosts", "127.0.0.1", "--decoder-ports", "8200"});
  ASSERT_THAT(args, IsOk());
  EXPECT_THAT(args->flags.at("--prefiller-ports"), ElementsAre("8100", "8101"));
}

// sglang_renderer.cc's prefill argv (testdata/sglang_prefill.golden) plus the
// other flags it may render.
TEST(ParseFlagsTest, TheFlagsTheDaemonRendersForSglangParse) {
  absl::StatusOr<ParsedArgs> args =
      Parse("sglang launch_server", {"--model-path",
                                     "/models/moe",
                                     "--host",
                                     "127.0.0.1",
                                     "--port",
                                     "8100",
                                     "--served-model-name",
                                     "moe",
                                     "--disaggregation-mode",
                                     "prefill",
                                     "--disaggregation-transfer-backend",
                                     "mooncake",
                                     "--disaggregation-ib-device",
                                     "mlx5_0",
                                     "--disaggregation-bootstrap-port",
                                     "8998",
                                     "--tp-size",
                                     "4",
                                     "--dp-size",
                                     "2",
                                     "--enable-dp-attention",
                                     "--ep-size",
                                     "4",
                                     "--chunked-prefill-size",
                                     "16384",
                                     "--max-running-requests",
                                     "64",
                                     "--context-length",
                                     "163840",
                                     "--mem-fraction-static",
                                     "0.8",
                                     "--init-expert-location",
                                     "/layouts/e.json",
                                     "--ep-dispatch-algorithm",
                                     "static",
                                     "--enable-metrics",
                                     "--enable-cache-report",
                                     "--trust-remote-code",
                                     "--quantization",
                                     "fp8"});
  ASSERT_THAT(args, IsOk());
  EXPECT_THAT(args->positionals, IsEmpty());
  EXPECT_THAT(args->flags.at("--tp-size"), ElementsAre("4"));
  // Aliases and argparse abbreviations land on the canonical name.
  args =
      Parse("sglang launch_server", {"--model", "m", "--tp", "2", "--tensor-parallel-size", "4"});
  ASSERT_THAT(args, IsOk());
  EXPECT_THAT(args->flags.at("--model-path"), ElementsAre("m"));
  EXPECT_THAT(args->flags.at("--tp-size"), ElementsAre("2", "4"));
}

TEST(ParseFlagsTest, TheRouterArgvOfTheDaemonParses) {
  absl::StatusOr<ParsedArgs> args = Parse(
      "sglang router", {"--pd-disaggregation", "--prefill", "http://127.0.0.1:8100", "8998",
                        "--prefill", "http://127.0.0.1:8101", "--decode", "http://127.0.0.1:8200",
                        "--host", "127.0.0.1", "--port", "8000", "--policy", "round_robin"});
  ASSERT_THAT(args, IsOk());
  EXPECT_THAT(args->flags.at("--prefill"),
              ElementsAre("http://127.0.0.1:8100", "8998", "http://127.0.0.1:8101"));
  EXPECT_THAT(args->flags.at("--decode"), ElementsAre("http://127.0.0.1:8200"));
  EXPECT_THAT(Parse("sglang router", {"--pd-disaggregated"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("sglang router 0.2.1 has no flag --pd-disaggregated")));
}

TEST(IsValidJsonTest, AcceptsJsonAndRejectsTheRest) {
  for (std::string_view good : {"{}", "[]", "0", "-1.5e3", "\"a\\u00e9\\n\"", "true", "null",
                                R"({"a": [1, 2, {"b": false}], "c": "d"})", " {\"x\":NaN} "}) {
    EXPECT_TRUE(IsValidJson(good)) << good;
  }
  for (std::string_view bad : {"", "{", "{'a': 1}", "{\"a\" 1}", "[1,]", "01", "1.", "tru",
                               "{\"a\":1} x", "\"unterminated", "{a:1}"}) {
    EXPECT_FALSE(IsValidJson(bad)) << bad;
  }
  EXPECT_FALSE(IsValidJson(std::string(100000, '[')));
}

}  // namespace
}  // namespace servelab::engines
