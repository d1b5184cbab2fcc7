#include "storage/request_rows.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "storage/migrations.h"
#include "storage/sqlite_db.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace servelab::storage {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Every field set to a value that is not its default.
v1::RequestRecord FullRecord() {
  v1::RequestRecord r;
  r.set_experiment_id("exp-7");
  r.set_phase(v1::PHASE_FORMAL);
  r.set_attempt(2);
  r.set_request_index(41);
  r.set_repeat(3);
  r.set_planned_send_ns(1'000);
  r.set_sent_ns(1'007);
  r.set_first_token_ns(1'500);
  r.set_end_ns(std::numeric_limits<int64_t>::max());
  for (int64_t c : {int64_t{600}, int64_t{-3}, int64_t{1} << 40,
                    std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    r.add_chunk_ns(c);
  }
  r.set_prompt_tokens(16384);
  r.set_completion_tokens(1024);
  r.set_cached_tokens(-1);  // Not reported by the server.
  r.set_http_status(500);
  r.set_error("HTTP 500: boom");
  r.mutable_load_start()->set_seconds(1'700'000'100);
  r.mutable_load_start()->set_nanos(42);
  r.set_requested_prompt_tokens(16000);
  r.set_requested_completion_tokens(1000);
  r.set_queued_ns(333);
  return r;
}

struct TableColumn {
  std::string name;
  std::string type;
  bool not_null;
  int pk;  // 1-based position in the primary key, 0 if not in it.
  bool operator==(const TableColumn&) const = default;
};

std::ostream& operator<<(std::ostream& os, const TableColumn& c) {
  return os << c.name << " " << c.type << (c.not_null ? " NOT NULL" : "") << " pk=" << c.pk;
}

std::vector<TableColumn> RequestsTableOf(SqliteDb& db) {
  std::vector<TableColumn> columns;
  auto info = db.Prepare("SELECT name, type, \"notnull\", pk FROM pragma_table_info('requests')");
  EXPECT_THAT(info, IsOk());
  while (info->Step().value_or(false)) {
    columns.push_back({std::string(info->ColumnText(0)), std::string(info->ColumnText(1)),
                       info->ColumnInt(2) != 0, static_cast<int>(info->ColumnInt(3))});
  }
  return columns;
}

std::vector<TableColumn> Expected() {
  std::vector<TableColumn> columns;
  const std::vector<std::string> key = {"experiment_id", "phase", "attempt", "repeat",
                                        "request_index"};
  for (const RequestColumn& c : RequestColumns()) {
    int pk = 0;
    for (size_t i = 0; i < key.size(); ++i) {
      if (key[i] == c.name) pk = static_cast<int>(i) + 1;
    }
    columns.push_back({std::string(c.name), std::string(c.type), c.not_null, pk});
  }
  return columns;
}

class RequestRowsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = SqliteDb::Open(dir_.File("rows.db"), SqliteDb::Options());
    ASSERT_THAT(db, IsOk());
    db_ = std::move(*db);
    ASSERT_THAT(db_->Exec(CreateRequestsTableSql()), IsOk());
  }

  v1::RequestRecord RoundTrip(const v1::RequestRecord& in) {
    EXPECT_THAT(db_->Exec("DELETE FROM requests"), IsOk());
    auto insert = db_->Prepare(InsertRequestSql());
    EXPECT_THAT(insert, IsOk());
    BindRequestRow(in, *insert);
    EXPECT_THAT(insert->Run(), IsOk());
    auto list = db_->Prepare("SELECT " + RequestColumnList() + " FROM requests");
    EXPECT_THAT(list, IsOk());
    EXPECT_TRUE(list->Step().value_or(false));
    v1::RequestRecord out;
    out.set_attempt(99);  // ReadRequestRow starts from a clear record.
    EXPECT_THAT(ReadRequestRow(*list, out), IsOk());
    return out;
  }

  testing::TempDir dir_;
  std::unique_ptr<SqliteDb> db_;
};

TEST_F(RequestRowsTest, EveryFieldRoundTrips) {
  v1::RequestRecord in = FullRecord();
  // The fixture really sets every field, so a field the codec drops fails.
  const auto* reflection = in.GetReflection();
  for (int i = 0; i < in.GetDescriptor()->field_count(); ++i) {
    const auto* field = in.GetDescriptor()->field(i);
    EXPECT_TRUE(field->is_repeated() ? reflection->FieldSize(in, field) > 0
                                     : reflection->HasField(in, field))
        << field->name() << " is not set by FullRecord()";
  }
  v1::RequestRecord out = RoundTrip(in);
  EXPECT_TRUE(MessageDifferencer::Equals(out, in)) << out.DebugString();
  EXPECT_EQ(out.cached_tokens(), -1);
}

TEST_F(RequestRowsTest, EmptyAndLongChunkListsRoundTrip) {
  v1::RequestRecord in = FullRecord();
  in.clear_chunk_ns();
  v1::RequestRecord out = RoundTrip(in);
  EXPECT_THAT(out.chunk_ns(), IsEmpty());
  EXPECT_TRUE(MessageDifferencer::Equals(out, in)) << out.DebugString();
  // The column is NOT NULL: an empty list is an empty blob, not NULL.
  EXPECT_EQ(db_->QueryInt("SELECT count(*) FROM requests WHERE length(chunk_ns) = 0").value(), 1);

  for (int64_t i = 0; i < 100'000; ++i) in.add_chunk_ns(i * 1'000'003 - 7);
  out = RoundTrip(in);
  ASSERT_EQ(out.chunk_ns_size(), 100'000);
  EXPECT_TRUE(MessageDifferencer::Equals(out, in));
}

TEST_F(RequestRowsTest, DefaultsRoundTripAndUnsetLoadStartIsNull) {
  v1::RequestRecord in;
  in.set_experiment_id("exp-1");
  v1::RequestRecord out = RoundTrip(in);
  EXPECT_TRUE(MessageDifferencer::Equals(out, in)) << out.DebugString();
  EXPECT_FALSE(out.has_load_start());
  EXPECT_EQ(db_->QueryInt("SELECT count(*) FROM requests WHERE load_start IS NULL").value(), 1);
  // The epoch is a set time, distinct from "unset".
  in.mutable_load_start();
  EXPECT_TRUE(RoundTrip(in).has_load_start());
}

TEST(ChunkNsCodecTest, LittleEndianEightBytesEach) {
  google::protobuf::RepeatedField<int64_t> values;
  values.Add(1);
  values.Add(-2);
  std::string bytes = EncodeChunkNs(values);
  EXPECT_EQ(bytes, std::string("\x01\0\0\0\0\0\0\0\xfe\xff\xff\xff\xff\xff\xff\xff", 16));
  google::protobuf::RepeatedField<int64_t> decoded;
  decoded.Add(5);  // Replaced, not appended to.
  ASSERT_THAT(DecodeChunkNs(bytes, decoded), IsOk());
  EXPECT_THAT(decoded, ElementsAre(1, -2));
  EXPECT_THAT(DecodeChunkNs(bytes.substr(0, 7), decoded),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("corrupt chunk_ns blob of 7")));
}

TEST(RequestColumnsTest, EveryRequestRecordFieldHasAColumnOfItsName) {
  std::vector<std::string> fields;
  const auto* descriptor = v1::RequestRecord::descriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    fields.push_back(descriptor->field(i)->name());
  }
  std::vector<std::string> columns;
  for (const RequestColumn& c : RequestColumns()) columns.emplace_back(c.name);
  std::sort(fields.begin(), fields.end());
  std::sort(columns.begin(), columns.end());
  EXPECT_EQ(columns, fields);
}

// The daemon's table comes from its literal migrations, never from
// CreateRequestsTableSql(): when this fails, add a migration step that brings
// `requests` to RequestColumns().
TEST(RequestColumnsTest, DaemonSchemaHasExactlyTheCurrentColumns) {
  testing::TempDir dir;
  auto daemon = SqliteDb::Open(dir.File("servelab.db"), SqliteDb::Options());
  ASSERT_THAT(daemon, IsOk());
  ASSERT_THAT(Migrate(**daemon), IsOk());
  EXPECT_THAT(RequestsTableOf(**daemon), ::testing::ContainerEq(Expected()));

  auto file = SqliteDb::Open(dir.File("file.db"), SqliteDb::Options());
  ASSERT_THAT(file, IsOk());
  ASSERT_THAT((*file)->Exec(CreateRequestsTableSql()), IsOk());
  EXPECT_THAT(RequestsTableOf(**file), ::testing::ContainerEq(Expected()));
}

}  // namespace
}  // namespace servelab::storage
