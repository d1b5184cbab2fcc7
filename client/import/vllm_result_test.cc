#include "client/import/vllm_result.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "client/import/import.h"
#include "tests/testing/status_matchers.h"

namespace servelab::client::import {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Testdata(const std::string& name) {
  std::ifstream in(std::string(SERVELAB_SOURCE_DIR) + "/client/import/testdata/" + name);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<ImportedRun> ParseTestdata(const std::string& name) {
  return ParseResultFile(Tool::kVllmBenchServe, Testdata(name), "runs/" + name);
}

TEST(VllmResultTest, DetailedResultBecomesRecords) {
  absl::StatusOr<ImportedRun> run = ParseTestdata("vllm_detailed.json");
  ASSERT_THAT(run, IsOk());
  EXPECT_EQ(run->source.tool(), "vllm-bench-serve");
  EXPECT_EQ(run->source.tool_version(), "0.16.0");  // From --metadata vllm_version=0.16.0.
  EXPECT_EQ(run->source.file_name(), "vllm_detailed.json");
  ASSERT_EQ(run->records.size(), 6u);

  // The load starts at request 0's arrival: its start time minus its 120 us queue time.
  const v1::RequestRecord& r0 = run->records[0];
  EXPECT_EQ(r0.phase(), v1::PHASE_FORMAL);
  EXPECT_EQ(r0.attempt(), 1);
  EXPECT_EQ(r0.repeat(), 1);
  EXPECT_EQ(r0.request_index(), 0);
  EXPECT_EQ(r0.planned_send_ns(), 0);
  EXPECT_EQ(r0.sent_ns(), 120'000);
  EXPECT_EQ(r0.queued_ns(), 120'000);
  EXPECT_EQ(r0.first_token_ns(), 250'120'000);
  EXPECT_THAT(r0.chunk_ns(), ElementsAre(250'120'000, 270'120'000, 291'120'000, 310'120'000));
  EXPECT_EQ(r0.end_ns(), 310'120'000);
  EXPECT_EQ(r0.prompt_tokens(), 128);
  EXPECT_EQ(r0.requested_prompt_tokens(), 128);
  EXPECT_EQ(r0.completion_tokens(), 4);
  EXPECT_EQ(r0.requested_completion_tokens(), 4);
  EXPECT_EQ(r0.cached_tokens(), -1);
  EXPECT_EQ(r0.http_status(), 200);
  EXPECT_EQ(r0.error(), "");
  EXPECT_FALSE(r0.has_load_start());

  // Waited 150 ms for a --max-concurrency slot.
  const v1::RequestRecord& r4 = run->records[4];
  EXPECT_EQ(r4.planned_send_ns(), 1'950'120'000);
  EXPECT_EQ(r4.sent_ns(), 2'100'120'000);
  EXPECT_EQ(r4.queued_ns(), 150'000'000);
  EXPECT_THAT(r4.chunk_ns(), ElementsAre(2'360'120'000, 2'378'120'000));
  EXPECT_EQ(r4.end_ns(), 2'378'120'000);

  // Two tokens in one chunk (an itl of 0 and 5 tokens in 4 chunks) stay as the file has them.
  const v1::RequestRecord& r5 = run->records[5];
  EXPECT_THAT(r5.chunk_ns(),
              ElementsAre(2'870'120'000, 2'890'120'000, 2'890'120'000, 2'911'120'000));
  EXPECT_EQ(r5.completion_tokens(), 5);
}

TEST(VllmResultTest, FailedRequestKeepsItsErrorAndHasNoTokens) {
  absl::StatusOr<ImportedRun> run = ParseTestdata("vllm_detailed.json");
  ASSERT_THAT(run, IsOk());
  const v1::RequestRecord& r2 = run->records[2];
  EXPECT_THAT(r2.error(), HasSubstr("ClientPayloadError: Response payload is not completed"));
  EXPECT_EQ(r2.http_status(), 0);
  EXPECT_EQ(r2.first_token_ns(), 0);
  EXPECT_THAT(r2.chunk_ns(), ElementsAre());
  EXPECT_EQ(r2.sent_ns(), 900'120'000);
  EXPECT_EQ(r2.end_ns(), 900'120'000);  // vLLM does not time failures: latency 0.
  EXPECT_EQ(r2.prompt_tokens(), 112);
  EXPECT_EQ(r2.completion_tokens(), 0);
}

TEST(VllmResultTest, FailureWithEmptyErrorTextIsStillFailed) {
  // A non-200 response whose reason was empty: vLLM writes error "" and ttft 0.
  std::string text = R"({"input_lens": [10, 12], "output_lens": [2, 0], "ttfts": [0.1, 0.0],)"
                     R"( "itls": [[0.01], []], "errors": ["", ""], "start_times": [5.0, 5.5]})";
  absl::StatusOr<ImportedRun> run = ParseResultFile(Tool::kVllmBenchServe, text, "r.json");
  ASSERT_THAT(run, IsOk());
  EXPECT_EQ(run->records[0].http_status(), 200);
  EXPECT_THAT(run->records[1].error(), HasSubstr("without an error text"));
  EXPECT_EQ(run->source.tool_version(), "");
}

TEST(VllmResultTest, WithoutLatenciesEndsAtTheLastChunk) {
  // Before latencies were saved, end = sent + ttft + sum(itls), the same instant.
  std::string text =
      R"({"input_lens": [10], "output_lens": [3], "ttfts": [0.5], "itls": [[0.25, 0.125]],)"
      R"( "errors": [""], "start_times": [100.0]})";
  absl::StatusOr<ImportedRun> run = ParseResultFile(Tool::kVllmBenchServe, text, "r.json");
  ASSERT_THAT(run, IsOk());
  const v1::RequestRecord& r = run->records[0];
  EXPECT_EQ(r.sent_ns(), 0);
  EXPECT_EQ(r.planned_send_ns(), 0);  // No queue_times: the schedule is not in the file.
  EXPECT_EQ(r.queued_ns(), 0);
  EXPECT_THAT(r.chunk_ns(), ElementsAre(500'000'000, 750'000'000, 875'000'000));
  EXPECT_EQ(r.end_ns(), 875'000'000);
}

TEST(VllmResultTest, TruncatedJsonNamesFileAndPosition) {
  EXPECT_THAT(ParseTestdata("vllm_truncated.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vllm_truncated.json: not valid JSON: line 1, column 1208: "
                                 "unexpected end of the text")));
}

TEST(VllmResultTest, MissingTtftsIsNamed) {
  EXPECT_THAT(ParseTestdata("vllm_missing_ttfts.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vllm_missing_ttfts.json: ttfts: missing")));
}

TEST(VllmResultTest, ListsOfDifferentLengthsAreNamed) {
  EXPECT_THAT(ParseTestdata("vllm_length_mismatch.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vllm_length_mismatch.json: output_lens: has 5 entries, but "
                                 "ttfts has 6")));
}

TEST(VllmResultTest, StringInItlsNamesTheElement) {
  EXPECT_THAT(ParseTestdata("vllm_string_in_itls.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vllm_string_in_itls.json: itls[3][1]: expected a number, got "
                                 "a string")));
}

TEST(VllmResultTest, NegativeTtftIsNamed) {
  EXPECT_THAT(ParseTestdata("vllm_negative_ttft.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vllm_negative_ttft.json: ttfts[4]: expected a time >= 0 "
                                 "seconds, got -0.26")));
}

TEST(VllmResultTest, EmptyFileIsRejected) {
  EXPECT_THAT(ParseTestdata("vllm_empty.json"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                         HasSubstr("vllm_empty.json: empty file")));
}

TEST(VllmResultTest, ResultWithoutRequestsIsRejected) {
  std::string text =
      R"({"input_lens": [], "output_lens": [], "ttfts": [], "itls": [], "errors": [],)"
      R"( "start_times": []})";
  EXPECT_THAT(ParseResultFile(Tool::kVllmBenchServe, text, "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("r.json: ttfts: empty: the result holds no requests")));
}

TEST(VllmResultTest, OlderFileWithoutStartTimesSaysWhichVersionWritesThem) {
  EXPECT_THAT(ParseTestdata("vllm_no_start_times.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("vllm_no_start_times.json: start_times: missing: the "
                                       "file lacks per-request send times"),
                             HasSubstr("--save-detailed since vLLM PR #32667"))));
}

TEST(VllmResultTest, ResultSavedWithoutSaveDetailedIsRejected) {
  EXPECT_THAT(ParseTestdata("vllm_not_detailed.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vllm_not_detailed.json: no per-request data")));
}

TEST(VllmResultTest, NanTimeIsNamed) {
  std::string text = R"({"input_lens": [1], "output_lens": [1], "ttfts": [NaN], "itls": [[]],)"
                     R"( "errors": [""], "start_times": [1.0]})";
  EXPECT_THAT(ParseResultFile(Tool::kVllmBenchServe, text, "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("r.json: ttfts[0]: expected a finite number, got nan")));
}

TEST(VllmResultTest, NonIntegralTokenCountIsNamed) {
  std::string text = R"({"input_lens": [1.5], "output_lens": [1], "ttfts": [0.1], "itls": [[]],)"
                     R"( "errors": [""], "start_times": [1.0]})";
  EXPECT_THAT(ParseResultFile(Tool::kVllmBenchServe, text, "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("r.json: input_lens[0]: expected a token count")));
}

TEST(VllmResultTest, LatencyShorterThanItsChunksIsRejected) {
  std::string text = R"({"input_lens": [1], "output_lens": [2], "ttfts": [0.1], "itls": [[0.1]],)"
                     R"( "errors": [""], "start_times": [1.0], "latencies": [0.15]})";
  EXPECT_THAT(ParseResultFile(Tool::kVllmBenchServe, text, "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("r.json: latencies[0]: 0.15 s is shorter than ttfts[0] + "
                                 "sum(itls[0]) = 0.2 s")));
}

TEST(VllmResultTest, TimeFarFromTheLoadStartIsRefused) {
  std::string text =
      R"({"input_lens": [1, 1], "output_lens": [1, 1], "ttfts": [0.1, 0.1], "itls": [[], []],)"
      R"( "errors": ["", ""], "start_times": [1.0, 3e9]})";
  EXPECT_THAT(ParseResultFile(Tool::kVllmBenchServe, text, "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("r.json: start_times[1]: 3e+09 s from the load start")));
  text = R"({"input_lens": [1], "output_lens": [2], "ttfts": [0.1], "itls": [[1e300]],)"
         R"( "errors": [""], "start_times": [1.0]})";
  EXPECT_THAT(ParseResultFile(Tool::kVllmBenchServe, text, "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("r.json: itls[0]: 1e+300 s")));
}

TEST(VllmResultTest, AppendedResultsAreRejected) {
  std::string one = Testdata("vllm_detailed.json");
  EXPECT_THAT(ParseResultFile(Tool::kVllmBenchServe, one + "\n" + one, "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("r.json: holds more than one result")));
}

TEST(VllmResultTest, TopLevelMustBeAnObject) {
  EXPECT_THAT(ParseResultFile(Tool::kVllmBenchServe, "[1, 2]", "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("r.json: expected a JSON object at the top, got a list")));
}

TEST(ImportTest, ToolNames) {
  EXPECT_THAT(ParseToolName("vllm"), IsOk());
  EXPECT_EQ(*ParseToolName("vllm"), Tool::kVllmBenchServe);
  EXPECT_EQ(*ParseToolName("vllm-bench-serve"), Tool::kVllmBenchServe);
  EXPECT_EQ(*ParseToolName("aisbench"), Tool::kAisbench);
  EXPECT_THAT(ParseToolName("genai-perf"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected vllm, vllm-bench-serve or aisbench")));
}

}  // namespace
}  // namespace servelab::client::import
