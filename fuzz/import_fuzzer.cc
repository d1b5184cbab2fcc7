// Fuzzes `servelab import`'s parsers of other tools' result files:
// ParseResultFile for vLLM's detailed result JSON and AISBench's details
// JSONL.
//
// Input: one byte choosing the tool (even: vLLM, odd: AISBench), then the
// file. Checks on an accepted file: request_index runs 0..n-1 and every
// record's times lie in order from its send.
#include "client/import/import.h"
#include "fuzz/fuzz_input.h"

namespace servelab::fuzz {
namespace {

void CheckRecords(const client::import::ImportedRun& run) {
  for (size_t i = 0; i < run.records.size(); ++i) {
    const v1::RequestRecord& record = run.records[i];
    SERVELAB_FUZZ_CHECK(record.request_index() == static_cast<int32_t>(i));
    if (record.first_token_ns() != 0) {
      SERVELAB_FUZZ_CHECK(record.first_token_ns() >= record.sent_ns());
    }
  }
}

}  // namespace
}  // namespace servelab::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using servelab::client::import::Tool;
  servelab::fuzz::FuzzInput input(data, size);
  const Tool tool = input.Byte() % 2 == 0 ? Tool::kVllmBenchServe : Tool::kAisbench;
  std::string_view text = input.Rest();
  auto run = servelab::client::import::ParseResultFile(tool, text, "fuzz-input");
  if (run.ok()) servelab::fuzz::CheckRecords(*run);
  return 0;
}
