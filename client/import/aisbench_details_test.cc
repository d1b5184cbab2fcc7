#include "client/import/aisbench_details.h"

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

// The numpy_store rows the details file refers to (perf_counter seconds).
AisbenchStores RunStores() {
  NumpyStore store;
  store[1] = {81234.5, 81234.75, 81234.77, 81234.79, 81234.81};
  store[2] = {81234.6, 81234.83, 81234.851, 81234.872};
  store[3] = {81234.55};  // HTTP 503: only the send time.
  store[4] = {81235.1, 81235.4, 81235.425};
  store[5] = {81235.2, 81235.45, 81235.47, 81235.49, 81235.51, 81235.53};
  AisbenchStores stores;
  stores["demo_gsm8k_0.db"] = store;
  return stores;
}

// One line in AISBench's layout with inline time points.
std::string Line(const std::string& success, const std::string& time_points,
                 const std::string& tokens = R"("input_tokens": 10, "output_tokens": 2)") {
  return R"({"data_abbr": "d", "id": 0, "success": )" + success + R"(, "error_info": "", )" +
         R"("time_points": )" + time_points + ", " + tokens + R"(, "db_name": "d_0.db"})" + "\n";
}

TEST(AisbenchDetailsTest, DetailsBecomeRecords) {
  absl::StatusOr<ImportedRun> run =
      ParseAisbenchDetails(Testdata("aisbench_details.jsonl"),
                           "performances/vllm-api-stream-chat/aisbench_details.jsonl", RunStores());
  ASSERT_THAT(run, IsOk());
  EXPECT_EQ(run->source.tool(), "aisbench");
  EXPECT_EQ(run->source.tool_version(), "");
  EXPECT_EQ(run->source.file_name(), "aisbench_details.jsonl");
  ASSERT_EQ(run->records.size(), 5u);

  const v1::RequestRecord& r0 = run->records[0];
  EXPECT_EQ(r0.phase(), v1::PHASE_FORMAL);
  EXPECT_EQ(r0.attempt(), 1);
  EXPECT_EQ(r0.repeat(), 1);
  EXPECT_EQ(r0.request_index(), 0);
  EXPECT_EQ(r0.sent_ns(), 0);
  EXPECT_EQ(r0.planned_send_ns(), 0);
  EXPECT_EQ(r0.first_token_ns(), 250'000'000);
  EXPECT_THAT(r0.chunk_ns(), ElementsAre(250'000'000, 270'000'000, 290'000'000, 310'000'000));
  EXPECT_EQ(r0.end_ns(), 310'000'000);
  EXPECT_EQ(r0.prompt_tokens(), 1512);
  EXPECT_EQ(r0.requested_prompt_tokens(), 1512);
  EXPECT_EQ(r0.completion_tokens(), 4);
  EXPECT_EQ(r0.requested_completion_tokens(), 4);
  EXPECT_EQ(r0.cached_tokens(), -1);
  EXPECT_EQ(r0.http_status(), 200);
  EXPECT_EQ(r0.error(), "");

  const v1::RequestRecord& r1 = run->records[1];
  EXPECT_EQ(r1.request_index(), 1);
  EXPECT_EQ(r1.sent_ns(), 100'000'000);
  EXPECT_THAT(r1.chunk_ns(), ElementsAre(330'000'000, 351'000'000, 372'000'000));
  EXPECT_EQ(r1.end_ns(), 372'000'000);

  const v1::RequestRecord& r4 = run->records[4];
  EXPECT_EQ(r4.sent_ns(), 700'000'000);
  EXPECT_THAT(r4.chunk_ns(),
              ElementsAre(950'000'000, 970'000'000, 990'000'000, 1'010'000'000, 1'030'000'000));
  EXPECT_EQ(r4.completion_tokens(), 5);
}

TEST(AisbenchDetailsTest, FailedRequestKeepsItsErrorAndSendTime) {
  absl::StatusOr<ImportedRun> run =
      ParseAisbenchDetails(Testdata("aisbench_details.jsonl"), "x.jsonl", RunStores());
  ASSERT_THAT(run, IsOk());
  const v1::RequestRecord& r2 = run->records[2];
  EXPECT_EQ(r2.error(), "Service Unavailable");
  EXPECT_EQ(r2.http_status(), 0);
  EXPECT_EQ(r2.first_token_ns(), 0);
  EXPECT_THAT(r2.chunk_ns(), ElementsAre());
  EXPECT_EQ(r2.sent_ns(), 50'000'000);
  EXPECT_EQ(r2.end_ns(), 50'000'000);
}

TEST(AisbenchDetailsTest, InlineTimePointsNeedNoStore) {
  std::string text =
      Line("true", "[10.0, 10.5, 10.75]") + Line("false", "[]") + Line("true", "null");
  absl::StatusOr<ImportedRun> run = ParseResultFile(Tool::kAisbench, text, "d_details.jsonl");
  ASSERT_THAT(run, IsOk());
  EXPECT_THAT(run->records[0].chunk_ns(), ElementsAre(500'000'000, 750'000'000));
  // Time points cleared after a failed retry: nothing to place in time.
  EXPECT_EQ(run->records[1].sent_ns(), 0);
  EXPECT_EQ(run->records[1].end_ns(), 0);
  EXPECT_THAT(run->records[1].error(), HasSubstr("recorded no error text"));
  // AISBench counts a request whose time points it could not save as failed.
  EXPECT_THAT(run->records[2].error(), HasSubstr("saved no time points"));
}

TEST(AisbenchDetailsTest, TimePointsInAnUnreadSideFileAreExplained) {
  EXPECT_THAT(ParseResultFile(Tool::kAisbench, Testdata("aisbench_details.jsonl"),
                              "aisbench_details.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("aisbench_details.jsonl: line 1: time_points: stored as row 1 "
                                 "of AISBench's SQLite file db_data/demo_gsm8k_0.db, which was "
                                 "not read")));
}

TEST(AisbenchDetailsTest, MissingRowIsNamed) {
  AisbenchStores stores = RunStores();
  stores["demo_gsm8k_0.db"].erase(4);
  EXPECT_THAT(ParseAisbenchDetails(Testdata("aisbench_details.jsonl"), "a.jsonl", stores),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a.jsonl: line 4: time_points: row 4 is not in "
                                 "db_data/demo_gsm8k_0.db")));
}

TEST(AisbenchDetailsTest, RowIdBeyondInt64IsRefused) {
  std::string text = Line("true", R"({"__db_ref__": 1e30})");
  EXPECT_THAT(ParseResultFile(Tool::kAisbench, text, "d.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("d.jsonl: line 1: time_points.__db_ref__: 1e+30 is not a SQLite "
                                 "row id (beyond int64)")));
  // ImportResultFile asks which side files to read: none for such a line.
  EXPECT_THAT(ReferencedDbNames(text), ::testing::IsEmpty());
}

TEST(AisbenchDetailsTest, TimeFarFromTheLoadStartIsRefused) {
  std::string text = Line("true", "[10.0, 10.5]") + Line("true", "[10.0, 2e9]");
  EXPECT_THAT(ParseResultFile(Tool::kAisbench, text, "d.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("d.jsonl: line 2: time_points: 2e+09 s from the load start")));
}

TEST(AisbenchDetailsTest, TruncatedLineIsNamed) {
  EXPECT_THAT(
      ParseAisbenchDetails(Testdata("aisbench_truncated.jsonl"), "aisbench_truncated.jsonl",
                           RunStores()),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("aisbench_truncated.jsonl: line 5, column 331: unexpected end of the "
                         "text inside a string: the file is truncated")));
}

TEST(AisbenchDetailsTest, MissingTimePointsIsNamed) {
  std::string text = Line("true", "[1.0, 2.0]") +
                     R"({"success": true, "input_tokens": 1, "output_tokens": 1})" + "\n";
  EXPECT_THAT(ParseResultFile(Tool::kAisbench, text, "a.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a.jsonl: line 2: time_points: missing")));
}

TEST(AisbenchDetailsTest, StringInTimePointsIsNamed) {
  EXPECT_THAT(ParseResultFile(Tool::kAisbench, Line("true", R"([1.0, "2.0"])"), "a.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a.jsonl: line 1: time_points[1]: expected a number, got a "
                                 "string")));
}

TEST(AisbenchDetailsTest, DecreasingTimePointsAreRejected) {
  EXPECT_THAT(ParseResultFile(Tool::kAisbench, Line("true", "[1.0, 2.0, 1.5]"), "a.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a.jsonl: line 1: time_points[2]: 1.5 is earlier than the "
                                 "point before it")));
}

TEST(AisbenchDetailsTest, SuccessWithoutAChunkIsRejected) {
  EXPECT_THAT(ParseResultFile(Tool::kAisbench, Line("true", "[1.0]"), "a.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a.jsonl: line 1: time_points: a successful request needs")));
}

TEST(AisbenchDetailsTest, SuccessWithoutServerTokenCountsIsRejected) {
  EXPECT_THAT(
      ParseResultFile(Tool::kAisbench,
                      Line("true", "[1.0, 2.0]", R"("input_tokens": 0, "output_tokens": 2)"),
                      "a.jsonl"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("a.jsonl: line 1: input_tokens: 0: the server reported no usage")));
  EXPECT_THAT(
      ParseResultFile(Tool::kAisbench,
                      Line("true", "[1.0, 2.0]", R"("input_tokens": 5, "output_tokens": null)"),
                      "a.jsonl"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("a.jsonl: line 1: output_tokens: missing or null")));
}

TEST(AisbenchDetailsTest, EmptyFileIsRejected) {
  EXPECT_THAT(ParseResultFile(Tool::kAisbench, "\n  \n", "a.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a.jsonl: empty file")));
}

TEST(AisbenchDetailsTest, FileWithoutAnyTimeIsRejected) {
  EXPECT_THAT(ParseResultFile(Tool::kAisbench, Line("false", "[]"), "a.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a.jsonl: no request has time points")));
}

TEST(AisbenchDetailsTest, ReferencedDbNamesInFirstSeenOrder) {
  std::string text = Testdata("aisbench_details.jsonl") + Line("true", "[1.0, 2.0]") + "{broken\n";
  EXPECT_THAT(ReferencedDbNames(text), ElementsAre("demo_gsm8k_0.db"));
}

}  // namespace
}  // namespace servelab::client::import
