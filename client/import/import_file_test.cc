#include "client/import/import_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "client/import/aisbench_store.h"
#include "client/import/npy_test_util.h"
#include "storage/sqlite_db.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace servelab::client::import {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::servelab::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TestdataPath(const std::string& name) {
  return std::string(SERVELAB_SOURCE_DIR) + "/client/import/testdata/" + name;
}

// numpy_store as AISBench's db_utils.py init_db creates it, rows from 1.
void WriteNumpyStore(const std::string& path, const std::vector<std::string>& blobs) {
  auto db = storage::SqliteDb::Open(path, {});
  ASSERT_THAT(db, IsOk());
  ASSERT_THAT((*db)->Exec("CREATE TABLE IF NOT EXISTS numpy_store (id INTEGER PRIMARY KEY "
                          "AUTOINCREMENT, arr_blob BLOB NOT NULL)"),
              IsOk());
  for (const std::string& blob : blobs) {
    auto insert = (*db)->Prepare("INSERT INTO numpy_store (arr_blob) VALUES (?1)");
    ASSERT_THAT(insert, IsOk());
    insert->BindBlob(1, blob);
    ASSERT_THAT(insert->Run(), IsOk());
  }
}

// performances/<model>/ with the details file and db_data/demo_gsm8k_0.db.
std::string MakeRunDir(const TempDir& tmp, bool finished = true) {
  std::string model_dir = tmp.File("vllm-api-stream-chat");
  std::filesystem::create_directories(model_dir + "/db_data");
  std::filesystem::create_directories(model_dir + "/tmp");
  std::filesystem::copy_file(TestdataPath("aisbench_details.jsonl"),
                             model_dir + "/demo_gsm8k_details.jsonl");
  using testing::EncodeNpyFloat64;
  WriteNumpyStore(model_dir + (finished ? "/db_data/" : "/tmp/tmp_") + "demo_gsm8k_0.db",
                  {EncodeNpyFloat64({81234.5, 81234.75, 81234.77, 81234.79, 81234.81}),
                   EncodeNpyFloat64({81234.6, 81234.83, 81234.851, 81234.872}),
                   EncodeNpyFloat64({81234.55}), EncodeNpyFloat64({81235.1, 81235.4, 81235.425}),
                   EncodeNpyFloat64({81235.2, 81235.45, 81235.47, 81235.49, 81235.51, 81235.53})});
  return model_dir + "/demo_gsm8k_details.jsonl";
}

TEST(ImportFileTest, AisbenchReadsTimePointsFromDbData) {
  TempDir tmp;
  std::string details = MakeRunDir(tmp);
  absl::StatusOr<ImportedRun> run = ImportResultFile(Tool::kAisbench, details);
  ASSERT_THAT(run, IsOk());
  EXPECT_EQ(run->source.file_name(), "demo_gsm8k_details.jsonl");
  ASSERT_EQ(run->records.size(), 5u);
  EXPECT_THAT(run->records[0].chunk_ns(),
              ElementsAre(250'000'000, 270'000'000, 290'000'000, 310'000'000));
  EXPECT_EQ(run->records[3].sent_ns(), 600'000'000);
  EXPECT_THAT(run->records[3].chunk_ns(), ElementsAre(900'000'000, 925'000'000));
}

TEST(ImportFileTest, AisbenchFallsBackToTheRunningRunsTmpFile) {
  TempDir tmp;
  std::string details = MakeRunDir(tmp, /*finished=*/false);
  absl::StatusOr<ImportedRun> run = ImportResultFile(Tool::kAisbench, details);
  ASSERT_THAT(run, IsOk());
  EXPECT_EQ(run->records.size(), 5u);
}

TEST(ImportFileTest, AisbenchWithoutItsSideFileSaysWhichIsMissing) {
  TempDir tmp;
  std::string details = tmp.File("demo_gsm8k_details.jsonl");
  std::filesystem::copy_file(TestdataPath("aisbench_details.jsonl"), details);
  EXPECT_THAT(ImportResultFile(Tool::kAisbench, details),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("keeps its time points in " + tmp.path() +
                                 "/db_data/demo_gsm8k_0.db, which does not exist")));
}

TEST(ImportFileTest, BadBlobNamesFileAndRow) {
  TempDir tmp;
  std::string db = tmp.File("x.db");
  WriteNumpyStore(db, {testing::EncodeNpyFloat64({1.0}), "garbage"});
  EXPECT_THAT(ReadAisbenchNumpyStore(db),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(db + ": numpy_store row 2: not a .npy array")));
}

TEST(ImportFileTest, FileWithoutNumpyStoreIsRejected) {
  TempDir tmp;
  std::string db = tmp.File("other.db");
  auto opened = storage::SqliteDb::Open(db, {});
  ASSERT_THAT(opened, IsOk());
  ASSERT_THAT((*opened)->Exec("CREATE TABLE t (x)"), IsOk());
  EXPECT_THAT(ReadAisbenchNumpyStore(db),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no numpy_store table")));
}

TEST(ImportFileTest, FileThatIsNotSqliteIsNamed) {
  TempDir tmp;
  std::string db = tmp.File("notdb.db");
  std::ofstream(db) << "this is not a SQLite file, just text long enough to be read as a header";
  absl::Status status = ReadAisbenchNumpyStore(db).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr(db + ": "));
}

TEST(ImportFileTest, VllmFileIsReadFromDisk) {
  absl::StatusOr<ImportedRun> run =
      ImportResultFile(Tool::kVllmBenchServe, TestdataPath("vllm_detailed.json"));
  ASSERT_THAT(run, IsOk());
  EXPECT_EQ(run->records.size(), 6u);
  EXPECT_EQ(run->source.file_name(), "vllm_detailed.json");
}

TEST(ImportFileTest, MissingFileIsNotFound) {
  EXPECT_THAT(ImportResultFile(Tool::kVllmBenchServe, "/nonexistent/r.json"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("file \"/nonexistent/r.json\" does not exist")));
}

TEST(ImportFileTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  TempDir dir;
  ASSERT_EQ(mkfifo(dir.File("r.json").c_str(), 0600), 0);
  EXPECT_THAT(ImportResultFile(Tool::kVllmBenchServe, dir.File("r.json")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a FIFO")));
}

}  // namespace
}  // namespace servelab::client::import
