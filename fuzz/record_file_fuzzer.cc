// Fuzzes `servelab-load analyze`'s reading of a record file: ReadRecordFile
// on the input written to a temporary file, as SQLite when the input starts
// with SQLite's header and as JSONL otherwise.
//
// Checks on an accepted file: the records come ordered by phase, attempt and
// index (record_file.h).
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <tuple>

#include "fuzz/fuzz_input.h"
#include "loadgen/record_file.h"

namespace servelab::fuzz {
namespace {

void Remove(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    ::unlink((path + suffix).c_str());
  }
}

void CheckOrder(const loadgen::RecordFile& file) {
  for (size_t i = 1; i < file.records.size(); ++i) {
    const v1::RequestRecord& a = file.records[i - 1];
    const v1::RequestRecord& b = file.records[i];
    SERVELAB_FUZZ_CHECK(std::make_tuple(a.phase(), a.attempt(), a.request_index()) <=
                        std::make_tuple(b.phase(), b.attempt(), b.request_index()));
  }
}

}  // namespace
}  // namespace servelab::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servelab;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const bool sqlite = bytes.substr(0, 16) == std::string_view("SQLite format 3\0", 16);
  const std::string path = fuzz::ScratchDir() / (sqlite ? "records.sqlite" : "records.jsonl");
  fuzz::Remove(path);
  {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  absl::StatusOr<loadgen::RecordFile> file = loadgen::ReadRecordFile(path);
  if (file.ok()) fuzz::CheckOrder(*file);
  fuzz::Remove(path);
  return 0;
}
