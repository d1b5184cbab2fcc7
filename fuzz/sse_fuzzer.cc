// Fuzzes the load generator's reading of a streaming response: SseParser on
// the byte stream and ParseStreamChunk on each event's data.
//
// Input: one byte choosing the API, one byte choosing the read size, then
// the stream. Checks: the events do not depend on how the stream is split
// into reads.
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "loadgen/sse.h"

namespace servelab::fuzz {
namespace {

std::vector<std::string> Events(std::string_view stream, size_t read_size) {
  loadgen::SseParser parser;
  std::vector<std::string> events;
  while (!stream.empty()) {
    std::string_view read = stream.substr(0, read_size);
    stream.remove_prefix(read.size());
    parser.Feed({read.data(), read.size()},
                [&](absl::string_view data) { events.emplace_back(data); });
  }
  return events;
}

}  // namespace
}  // namespace servelab::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servelab;
  fuzz::FuzzInput input(data, size);
  const auto api = static_cast<v1::Api>(input.Byte() % 4);
  const size_t read_size = input.Byte() % 16 + 1;
  std::string_view stream = input.Rest();
  std::vector<std::string> whole = fuzz::Events(stream, stream.size() + 1);
  SERVELAB_FUZZ_CHECK(fuzz::Events(stream, read_size) == whole);
  for (const std::string& event : whole) {
    loadgen::StreamChunk chunk = loadgen::ParseStreamChunk(event, api);
    if (chunk.done) SERVELAB_FUZZ_CHECK(!chunk.has_tokens && !chunk.has_usage);
  }
  return 0;
}
