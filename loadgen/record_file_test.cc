#include "loadgen/record_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/util/time_util.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::loadgen {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

std::vector<v1::RequestRecord> Records() {
  std::vector<v1::RequestRecord> rs;
  for (int i = 0; i < 3; ++i) {
    v1::RequestRecord r;
    r.set_experiment_id("load");
    r.set_phase(i == 0 ? v1::PHASE_CACHE_SEED : v1::PHASE_FORMAL);
    r.set_attempt(1);
    r.set_index(i);
    r.set_planned_send_ns(10 * i);
    r.set_sent_ns(10 * i + 1);
    r.set_queued_ns(i);
    r.set_first_token_ns(100 + i);
    r.add_chunk_ns(100 + i);
    r.add_chunk_ns(-1);  // Round-trips any int64.
    r.add_chunk_ns(1LL << 40);
    r.set_end_ns(200 + i);
    r.set_prompt_tokens(8);
    r.set_completion_tokens(3);
    r.set_cached_tokens(4);
    r.set_http_status(i == 2 ? 500 : 200);
    if (i == 2) r.set_error("HTTP 500: boom");
    r.set_requested_prompt_tokens(8);
    r.set_requested_completion_tokens(3);
    *r.mutable_load_start() = google::protobuf::util::TimeUtil::NanosecondsToTimestamp(1700000000123456789LL);
    rs.push_back(r);
  }
  return rs;
}

class RecordFileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RecordFileTest, RoundTripsSpecAndRecordsInBatches) {
  servelab::testing::TempDir dir;
  std::string path = dir.File("run" + GetParam());
  v1::ExperimentSpec spec;
  spec.mutable_workload()->set_concurrency(64);
  spec.mutable_analysis()->set_cards(16);
  auto sink = OpenRecordFile(path, spec);
  ASSERT_THAT(sink, IsOk());
  std::vector<v1::RequestRecord> rs = Records();
  ASSERT_THAT((*sink)->Write({rs[2]}), IsOk());
  ASSERT_THAT((*sink)->Write({rs[0], rs[1]}), IsOk());
  sink->reset();
  auto file = ReadRecordFile(path);
  ASSERT_THAT(file, IsOk());
  EXPECT_EQ(file->spec.workload().concurrency(), 64);
  EXPECT_EQ(file->spec.analysis().cards(), 16);
  ASSERT_EQ(file->records.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(file->records[i], rs[i])) << file->records[i].DebugString();
  }
  EXPECT_THAT(OpenRecordFile(path, spec), StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("--out")));
}

INSTANTIATE_TEST_SUITE_P(Formats, RecordFileTest, ::testing::Values(".sqlite", ".jsonl"));

TEST(RecordFileErrorsTest, UnknownExtensionAndMissingFile) {
  servelab::testing::TempDir dir;
  EXPECT_THAT(OpenRecordFile(dir.File("x.csv"), {}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(".jsonl")));
  EXPECT_THAT(ReadRecordFile(dir.File("none.sqlite")), StatusIs(absl::StatusCode::kNotFound, HasSubstr("none.sqlite")));
}

TEST(RecordFileErrorsTest, TornLastJsonlLineIsIgnored) {
  servelab::testing::TempDir dir;
  std::string path = dir.File("run.jsonl");
  servelab::testing::WriteFile(path, "{\"spec\":{}}\n{\"index\":1,\"phase\":\"PHASE_FORMAL\"}\n{\"index\":2,\"ph");
  auto file = ReadRecordFile(path);
  ASSERT_THAT(file, IsOk());
  ASSERT_EQ(file->records.size(), 1u);
  EXPECT_EQ(file->records[0].index(), 1);
}

}  // namespace
}  // namespace servelab::loadgen
