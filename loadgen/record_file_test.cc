#include "loadgen/record_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/util/time_util.h"
#include "storage/sqlite_db.h"
#include "storage/sqlite_store.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::loadgen {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<v1::RequestRecord> Records() {
  std::vector<v1::RequestRecord> rs;
  for (int i = 0; i < 3; ++i) {
    v1::RequestRecord r;
    r.set_experiment_id("load");
    r.set_phase(i == 0 ? v1::PHASE_CACHE_SEED : v1::PHASE_FORMAL);
    r.set_attempt(1);
    r.set_request_index(i);
    r.set_planned_send_ns(10 * i);
    r.set_sent_ns(10 * i + 1);
    r.set_queued_ns(i);
    r.set_first_token_ns(i == 2 ? 0 : 100 + i);
    if (i != 2) {  // The failed request streamed no chunk.
      r.add_chunk_ns(100 + i);
      r.add_chunk_ns(-1);  // Round-trips any int64.
      r.add_chunk_ns(1LL << 40);
    }
    r.set_end_ns(200 + i);
    r.set_prompt_tokens(8);
    r.set_completion_tokens(3);
    r.set_cached_tokens(i == 1 ? -1 : 4);  // -1: the server did not report it.
    r.set_http_status(i == 2 ? 500 : 200);
    if (i == 2) r.set_error("HTTP 500: boom");
    r.set_requested_prompt_tokens(8);
    r.set_requested_completion_tokens(3);
    *r.mutable_load_start() =
        google::protobuf::util::TimeUtil::NanosecondsToTimestamp(1700000000123456789LL);
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
  spec.mutable_analysis()->set_device_count(16);
  auto sink = OpenRecordFile(path, spec);
  ASSERT_THAT(sink, IsOk());
  std::vector<v1::RequestRecord> rs = Records();
  ASSERT_THAT((*sink)->Write({rs[2]}), IsOk());
  ASSERT_THAT((*sink)->Write({rs[0], rs[1]}), IsOk());
  sink->reset();
  auto file = ReadRecordFile(path);
  ASSERT_THAT(file, IsOk());
  EXPECT_EQ(file->spec.workload().concurrency(), 64);
  EXPECT_EQ(file->spec.analysis().device_count(), 16);
  ASSERT_EQ(file->records.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(file->records[i], rs[i]))
        << file->records[i].DebugString();
  }
  EXPECT_THAT(OpenRecordFile(path, spec),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("--out")));
}

INSTANTIATE_TEST_SUITE_P(Formats, RecordFileTest, ::testing::Values(".sqlite", ".jsonl"));

// (name, type, notnull, default, pk) of each column of `requests`, in order.
std::vector<std::string> RequestsColumnsOf(const std::string& path) {
  storage::SqliteDb::Options options;
  options.read_only = true;
  auto db = storage::SqliteDb::Open(path, options);
  EXPECT_THAT(db, IsOk());
  if (!db.ok()) return {};
  auto info = (*db)->Prepare(
      "SELECT name || ' ' || type || ' ' || \"notnull\" || ' ' || ifnull(dflt_value, '-') || ' ' "
      "|| pk FROM pragma_table_info('requests') ORDER BY cid");
  EXPECT_THAT(info, IsOk());
  std::vector<std::string> columns;
  while (info->Step().value_or(false)) columns.emplace_back(info->ColumnText(0));
  return columns;
}

TEST(SqliteRecordFileTest, RequestsTableHasTheDaemonStoresColumns) {
  servelab::testing::TempDir dir;
  ASSERT_THAT(OpenRecordFile(dir.File("run.sqlite"), {}), IsOk());
  ASSERT_THAT(storage::SqliteStore::Open(dir.File("servelab.db")), IsOk());
  std::vector<std::string> file = RequestsColumnsOf(dir.File("run.sqlite"));
  ASSERT_GE(file.size(), 18u);
  EXPECT_EQ(file, RequestsColumnsOf(dir.File("servelab.db")));
  EXPECT_EQ(file.back(), "repeat INTEGER 1 - 4");
}

// The layout servelab-load wrote before the requests table gained queued_ns:
// a file from an older build must still be analyzable.
constexpr char kLegacyLayout[] = R"sql(
CREATE TABLE requests (
  experiment_id TEXT NOT NULL, phase INTEGER NOT NULL, attempt INTEGER NOT NULL,
  idx INTEGER NOT NULL, planned_send_ns INTEGER NOT NULL, sent_ns INTEGER NOT NULL,
  first_token_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, chunk_ns BLOB NOT NULL,
  prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL, http_status INTEGER NOT NULL, error TEXT NOT NULL,
  requested_prompt_tokens INTEGER NOT NULL, requested_completion_tokens INTEGER NOT NULL,
  load_start INTEGER,
  PRIMARY KEY (experiment_id, phase, attempt, idx)
);
CREATE TABLE load_records_extra (
  experiment_id TEXT NOT NULL, phase INTEGER NOT NULL, attempt INTEGER NOT NULL,
  idx INTEGER NOT NULL, queued_ns INTEGER NOT NULL,
  PRIMARY KEY (experiment_id, phase, attempt, idx)
);
CREATE TABLE load_spec (id INTEGER PRIMARY KEY CHECK (id = 1), spec_json TEXT NOT NULL);
INSERT INTO load_spec VALUES (1, '{"workload": {"concurrency": 8}}');
INSERT INTO requests VALUES ('load', 4, 1, 1, 10, 11, 100, 200,
  X'6400000000000000FFFFFFFFFFFFFFFF', 8, 3, -1, 200, '', 8, 3, 1700000000123456789);
INSERT INTO requests VALUES ('load', 4, 1, 0, 0, 1, 0, 50, X'', 8, 0, 4, 500, 'HTTP 500', 8, 3,
  NULL);
INSERT INTO load_records_extra VALUES ('load', 4, 1, 1, 77);
)sql";

TEST(SqliteRecordFileTest, ReadsFilesOfTheOldLayout) {
  servelab::testing::TempDir dir;
  std::string path = dir.File("old.sqlite");
  {
    auto db = storage::SqliteDb::Open(path, {});
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT((*db)->Exec(kLegacyLayout), IsOk());
  }
  auto file = ReadRecordFile(path);
  ASSERT_THAT(file, IsOk());
  EXPECT_EQ(file->spec.workload().concurrency(), 8);
  ASSERT_EQ(file->records.size(), 2u);
  const v1::RequestRecord& failed = file->records[0];
  EXPECT_EQ(failed.request_index(), 0);
  EXPECT_EQ(failed.queued_ns(), 0);  // No side row.
  EXPECT_THAT(failed.chunk_ns(), ::testing::IsEmpty());
  EXPECT_FALSE(failed.has_load_start());
  EXPECT_EQ(failed.error(), "HTTP 500");
  const v1::RequestRecord& ok = file->records[1];
  EXPECT_EQ(ok.phase(), v1::PHASE_FORMAL);
  EXPECT_EQ(ok.queued_ns(), 77);
  EXPECT_EQ(ok.cached_tokens(), -1);
  EXPECT_THAT(ok.chunk_ns(), ElementsAre(100, -1));
  EXPECT_EQ(google::protobuf::util::TimeUtil::TimestampToNanoseconds(ok.load_start()),
            1700000000123456789LL);
}

// The layout with queued_ns as a column but the index still named `idx`.
TEST(SqliteRecordFileTest, ReadsFilesWhoseIndexColumnIsIdx) {
  servelab::testing::TempDir dir;
  std::string path = dir.File("idx.sqlite");
  {
    auto db = storage::SqliteDb::Open(path, {});
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT((*db)->Exec(kLegacyLayout), IsOk());
    ASSERT_THAT((*db)->Exec("ALTER TABLE requests ADD COLUMN queued_ns INTEGER NOT NULL DEFAULT 5;"
                            "DROP TABLE load_records_extra;"),
                IsOk());
  }
  auto file = ReadRecordFile(path);
  ASSERT_THAT(file, IsOk());
  ASSERT_EQ(file->records.size(), 2u);
  EXPECT_EQ(file->records[0].request_index(), 0);
  EXPECT_EQ(file->records[1].request_index(), 1);
  EXPECT_EQ(file->records[1].queued_ns(), 5);
  EXPECT_THAT(file->records[1].chunk_ns(), ElementsAre(100, -1));
}

TEST(SqliteRecordFileTest, ForeignDatabaseIsNotARecordFile) {
  servelab::testing::TempDir dir;
  std::string path = dir.File("other.db");
  {
    auto db = storage::SqliteDb::Open(path, {});
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT((*db)->Exec("CREATE TABLE load_spec (id INTEGER, spec_json TEXT)"), IsOk());
  }
  EXPECT_THAT(ReadRecordFile(path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no requests table")));
}

TEST(RecordFileErrorsTest, UnknownExtensionAndMissingFile) {
  servelab::testing::TempDir dir;
  EXPECT_THAT(OpenRecordFile(dir.File("x.csv"), {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(".jsonl")));
  EXPECT_THAT(ReadRecordFile(dir.File("none.sqlite")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("none.sqlite")));
}

TEST(RecordFileErrorsTest, TornLastJsonlLineIsIgnored) {
  servelab::testing::TempDir dir;
  std::string path = dir.File("run.jsonl");
  servelab::testing::WriteFile(
      path,
      "{\"spec\":{}}\n{\"request_index\":1,\"phase\":\"PHASE_FORMAL\"}\n{\"request_index\":2,\"ph");
  auto file = ReadRecordFile(path);
  ASSERT_THAT(file, IsOk());
  ASSERT_EQ(file->records.size(), 1u);
  EXPECT_EQ(file->records[0].request_index(), 1);
}

}  // namespace
}  // namespace servelab::loadgen
