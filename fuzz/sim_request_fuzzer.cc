// Fuzzes what servelab-sim does with a request before it models it: Beast's
// HTTP parser with the sim's settings and ToIncomingRequest, the JSON reader,
// and the generation request parsers.
//
// Input: one byte choosing the mode, then either a whole HTTP request (mode
// 0: routed by its path, as Server::Dispatch does) or a request body for
// /v1/completions, /v1/chat/completions or /generate (modes 1-3).
// Checks: ParseJson (simdjson) and ParseJsonByHand agree; a parsed body
// written with ToJson parses back to the same text.
#include <string>

#include "fuzz/fuzz_input.h"
#include "sim/config.h"
#include "sim/http_request.h"
#include "sim/json.h"
#include "sim/request.h"

namespace servelab::fuzz {
namespace {

void ParseBody(std::string_view body, int mode) {
  absl::StatusOr<sim::JsonValue> json = sim::ParseJson({body.data(), body.size()});
  // The fast reader (simdjson) answers as the hand-written one does.
  absl::StatusOr<sim::JsonValue> by_hand = sim::ParseJsonByHand({body.data(), body.size()});
  SERVELAB_FUZZ_CHECK(json.ok() == by_hand.ok());
  SERVELAB_FUZZ_CHECK(json.ok() ? sim::ToJson(*json) == sim::ToJson(*by_hand)
                                : json.status() == by_hand.status());
  if (!json.ok()) return;
  const std::string written = sim::ToJson(*json);
  absl::StatusOr<sim::JsonValue> reread = sim::ParseJson(written);
  SERVELAB_FUZZ_CHECK(reread.ok());
  SERVELAB_FUZZ_CHECK(sim::ToJson(*reread) == written);
  static const sim::SimConfig config;
  if (mode == 3) {
    (void)sim::ParseGenerateRequest(*json, config);
  } else {
    (void)sim::ParseGenerationRequest(
        *json, mode == 1 ? sim::ApiKind::kCompletion : sim::ApiKind::kChat, config);
  }
}

void ParseHttp(std::string_view bytes) {
  sim::HttpRequestParser parser;
  parser.body_limit(static_cast<uint64_t>(sim::SimConfig().max_body_bytes));
  parser.eager(true);
  boost::beast::error_code ec;
  while (!bytes.empty() && !parser.is_done()) {
    size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
    if (ec && ec != boost::beast::http::error::need_more) return;
    if (used == 0) return;  // Needs bytes the input does not have.
    bytes.remove_prefix(used);
  }
  if (!parser.is_done()) return;
  sim::IncomingRequest request = sim::ToIncomingRequest(parser.get());
  if (request.path == "/v1/completions") ParseBody(request.body, 1);
  if (request.path == "/v1/chat/completions") ParseBody(request.body, 2);
  if (request.path == "/generate") ParseBody(request.body, 3);
}

}  // namespace
}  // namespace servelab::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  servelab::fuzz::FuzzInput input(data, size);
  const int mode = input.Byte() % 4;
  if (mode == 0) {
    servelab::fuzz::ParseHttp(input.Rest());
  } else {
    servelab::fuzz::ParseBody(input.Rest(), mode);
  }
  return 0;
}
