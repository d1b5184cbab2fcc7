#include "loadgen/record_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace servelab::loadgen {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

bool IsSqlite(const std::string& path) {
  return absl::EndsWith(path, ".sqlite") || absl::EndsWith(path, ".db") ||
         absl::EndsWith(path, ".sqlite3");
}

}  // namespace

absl::StatusOr<std::unique_ptr<RecordSink>> OpenRecordFile(const std::string& path,
                                                           const v1::ExperimentSpec& spec) {
  if (Exists(path)) {
    return absl::AlreadyExistsError(
        absl::StrCat(path, " already exists; remove it or choose another --out file"));
  }
  if (IsSqlite(path)) return OpenSqliteRecordFile(path, spec);
  if (absl::EndsWith(path, ".jsonl")) return OpenJsonlRecordFile(path, spec);
  return absl::InvalidArgumentError(
      absl::StrCat("record file ", path, " must end in .sqlite, .db or .jsonl"));
}

absl::StatusOr<RecordFile> ReadRecordFile(const std::string& path) {
  if (!Exists(path)) return absl::NotFoundError(absl::StrCat("no such file: ", path));
  absl::StatusOr<RecordFile> file =
      IsSqlite(path) ? ReadSqliteRecordFile(path)
      : absl::EndsWith(path, ".jsonl")
          ? ReadJsonlRecordFile(path)
          : absl::StatusOr<RecordFile>(absl::InvalidArgumentError(
                absl::StrCat("record file ", path, " must end in .sqlite, .db or .jsonl")));
  if (!file.ok()) return file;
  std::stable_sort(file->records.begin(), file->records.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(a.phase(), a.attempt(), a.request_index()) <
           std::make_tuple(b.phase(), b.attempt(), b.request_index());
  });
  return file;
}

}  // namespace servelab::loadgen
