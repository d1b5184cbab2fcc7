// The two hot JSON reads, each by the reader servelab uses and by the JSON
// libraries Debian 12 has (RapidJSON 1.1, simdjson 3.0), on the same bytes,
// with the same answer checked (issue 9, "How"; docs/design.md §10):
//   - a streamed chunk as servelab-load reads it (loadgen/sse.h
//     ParseStreamChunk: token or not, usage counts), once per chunk. It was
//     a hand-written reader until this bench showed simdjson's DOM 4 times
//     faster; simdjson's on-demand API is faster still, and is shown for
//     that, but validates only what it reads;
//   - a completion request with a token-id prompt as servelab-sim reads it
//     (sim/json.h ParseJson, then sim/request.h ParseGenerationRequest), once
//     per request and leg: by hand (ParseJsonByHand, the reference) and by
//     simdjson into the sim's JsonValue (ParseJson), beside the libraries'
//     own trees.
// Prints ns per read for each reader and its time over the first row's,
// measured in the same run; exits 1 if the readers disagree.
#include <rapidjson/document.h>
#include <simdjson.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "loadgen/sse.h"
#include "sim/config.h"
#include "sim/json.h"
#include "sim/request.h"

namespace servelab::bench {
namespace {

// vLLM's /v1/completions stream chunks (CompletionStreamResponse, as its
// serving_completion.py writes them): a token, then the usage chunk.
const std::string kTokenChunk =
    R"({"id":"cmpl-5f0c2b7e8a3d4c1f9e6b2a7d3c8e1f4a","object":"text_completion",)"
    R"("created":1733500000,"model":"meta-llama/Llama-3.1-70B-Instruct","choices":)"
    R"([{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}]})";
const std::string kUsageChunk =
    R"({"id":"cmpl-5f0c2b7e8a3d4c1f9e6b2a7d3c8e1f4a","object":"text_completion",)"
    R"("created":1733500000,"model":"meta-llama/Llama-3.1-70B-Instruct","choices":[],)"
    R"("usage":{"prompt_tokens":8192,"total_tokens":8448,"completion_tokens":256,)"
    R"("prompt_tokens_details":{"cached_tokens":4096}}})";

// What servelab-load sends: an exact-length streaming request whose prompt
// is token ids (loadgen/request.h).
std::string RequestBody(const std::string& model, int prompt_tokens) {
  std::string body = R"({"model":")" + model + R"(","prompt":[)";
  unsigned id = 12345;
  for (int i = 0; i < prompt_tokens; ++i) {
    id = id * 1103515245u + 12345u;
    if (i > 0) body += ',';
    body += std::to_string(id % 128000);
  }
  body += R"(],"max_tokens":256,"min_tokens":256,"ignore_eos":true,"stream":true,)"
          R"("stream_options":{"include_usage":true},"user":"exp-1/formal/1"})";
  return body;
}

// --- the chunk, three ways; each fills a StreamChunk for API_COMPLETIONS ---

loadgen::StreamChunk ChunkOurs(const std::string& data) {
  return loadgen::ParseStreamChunk(data, v1::API_COMPLETIONS);
}

loadgen::StreamChunk ChunkRapid(const std::string& data) {
  loadgen::StreamChunk c;
  rapidjson::Document d;
  d.Parse(data.data(), data.size());
  if (d.HasParseError() || !d.IsObject()) {
    c.error = "not JSON";
    return c;
  }
  if (auto e = d.FindMember("error"); e != d.MemberEnd()) c.error = "error";
  if (auto ch = d.FindMember("choices");
      ch != d.MemberEnd() && ch->value.IsArray() && !ch->value.Empty()) {
    const auto& first = ch->value[0];
    if (auto t = first.FindMember("text");
        t != first.MemberEnd() && t->value.IsString() && t->value.GetStringLength() > 0) {
      c.has_tokens = true;
    }
  }
  if (auto u = d.FindMember("usage"); u != d.MemberEnd() && u->value.IsObject()) {
    c.has_usage = true;
    const auto& usage = u->value;
    c.prompt_tokens = usage["prompt_tokens"].GetInt();
    c.completion_tokens = usage["completion_tokens"].GetInt();
    if (auto p = usage.FindMember("prompt_tokens_details");
        p != usage.MemberEnd() && p->value.IsObject() && p->value.HasMember("cached_tokens")) {
      c.cached_tokens = p->value["cached_tokens"].GetInt();
    }
  }
  return c;
}

loadgen::StreamChunk ChunkSimd(simdjson::ondemand::parser& parser,
                               const simdjson::padded_string& data) {
  loadgen::StreamChunk c;
  simdjson::ondemand::document d;
  if (parser.iterate(data).get(d) != simdjson::SUCCESS) {
    c.error = "not JSON";
    return c;
  }
  // On demand reads fields in document order; one pass over the members.
  simdjson::ondemand::object root;
  if (d.get_object().get(root) != simdjson::SUCCESS) return c;
  for (auto field : root) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) break;
    if (key == "error") {
      c.error = "error";
    } else if (key == "choices") {
      for (auto choice : field.value().get_array()) {
        std::string_view text;
        if (choice.find_field_unordered("text").get_string().get(text) == simdjson::SUCCESS &&
            !text.empty()) {
          c.has_tokens = true;
        }
        break;
      }
    } else if (key == "usage") {
      simdjson::ondemand::object usage;
      if (field.value().get_object().get(usage) != simdjson::SUCCESS) continue;
      c.has_usage = true;
      int64_t n = 0;
      if (usage.find_field_unordered("prompt_tokens").get_int64().get(n) == simdjson::SUCCESS) {
        c.prompt_tokens = static_cast<int32_t>(n);
      }
      if (usage.find_field_unordered("completion_tokens").get_int64().get(n) == simdjson::SUCCESS) {
        c.completion_tokens = static_cast<int32_t>(n);
      }
      if (usage.find_field_unordered("prompt_tokens_details")
              .find_field_unordered("cached_tokens")
              .get_int64()
              .get(n) == simdjson::SUCCESS) {
        c.cached_tokens = static_cast<int32_t>(n);
      }
    }
  }
  return c;
}

bool SameChunk(const loadgen::StreamChunk& a, const loadgen::StreamChunk& b) {
  return a.done == b.done && a.has_tokens == b.has_tokens && a.has_usage == b.has_usage &&
         a.prompt_tokens == b.prompt_tokens && a.completion_tokens == b.completion_tokens &&
         a.cached_tokens == b.cached_tokens && a.error.empty() == b.error.empty();
}

// --- the request, three ways; each fills the fields the sim models ---

// The sim's path: the body as a JsonValue (by `parse`), then its fields.
sim::GenerationRequest RequestOurs(
    const std::function<absl::StatusOr<sim::JsonValue>(absl::string_view)>& parse,
    const std::string& body, const sim::SimConfig& config) {
  absl::StatusOr<sim::JsonValue> json = parse(body);
  if (!json.ok()) return {};
  absl::StatusOr<sim::GenerationRequest> r =
      sim::ParseGenerationRequest(*json, sim::ApiKind::kCompletion, config);
  return r.ok() ? *r : sim::GenerationRequest{};
}

sim::GenerationRequest RequestRapid(const std::string& body) {
  sim::GenerationRequest r;
  rapidjson::Document d;
  d.Parse(body.data(), body.size());
  if (d.HasParseError() || !d.IsObject()) return r;
  const auto& prompt = d["prompt"];
  r.prompt_tokens.reserve(prompt.Size());
  for (const auto& t : prompt.GetArray()) r.prompt_tokens.push_back(t.GetInt64());
  r.max_tokens = d["max_tokens"].GetInt64();
  r.min_tokens = d["min_tokens"].GetInt64();
  r.ignore_eos = d["ignore_eos"].GetBool();
  r.stream = d["stream"].GetBool();
  r.include_usage = d["stream_options"]["include_usage"].GetBool();
  r.user = d["user"].GetString();
  return r;
}

sim::GenerationRequest RequestSimd(simdjson::dom::parser& parser,
                                   const simdjson::padded_string& body) {
  sim::GenerationRequest r;
  simdjson::dom::element d;
  if (parser.parse(body).get(d) != simdjson::SUCCESS) return r;
  simdjson::dom::array prompt = d["prompt"].get_array();
  r.prompt_tokens.reserve(prompt.size());
  for (simdjson::dom::element t : prompt) r.prompt_tokens.push_back(int64_t(t));
  r.max_tokens = int64_t(d["max_tokens"]);
  r.min_tokens = int64_t(d["min_tokens"]);
  r.ignore_eos = bool(d["ignore_eos"]);
  r.stream = bool(d["stream"]);
  r.include_usage = bool(d["stream_options"]["include_usage"]);
  r.user = std::string(std::string_view(d["user"]));
  return r;
}

bool SameRequest(const sim::GenerationRequest& a, const sim::GenerationRequest& b) {
  return a.prompt_tokens == b.prompt_tokens && a.max_tokens == b.max_tokens &&
         a.min_tokens == b.min_tokens && a.ignore_eos == b.ignore_eos && a.stream == b.stream &&
         a.include_usage == b.include_usage && a.user == b.user;
}

// ns per call of `read`, over about `seconds` of repeated calls.
double NsPerRead(double seconds, const std::function<void()>& read) {
  using Clock = std::chrono::steady_clock;
  long long n = 0;
  const auto start = Clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    for (int i = 0; i < 16; ++i) read();
    n += 16;
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
         static_cast<double>(n);
}

void Row(const char* what, const char* reader, double ns, double ours) {
  std::printf("  %-12s %-32s %12.1f ns   %6.3fx the first\n", what, reader, ns, ns / ours);
}

}  // namespace
}  // namespace servelab::bench

int main(int argc, char** argv) {
  using namespace servelab;
  using namespace servelab::bench;
  CLI::App app{
      "json_bench: the hand-written JSON readers against RapidJSON and simdjson (issue 9)"};
  double seconds = 0.5;
  int prompt_tokens = 8192;
  app.add_option("--seconds", seconds, "Time per reader and input")->check(CLI::PositiveNumber);
  app.add_option("--prompt-tokens", prompt_tokens, "Token ids in the request's prompt")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::printf("machine: %s\n", Machine().c_str());
  simdjson::ondemand::parser chunk_parser;
  simdjson::dom::parser request_parser;
  int mismatches = 0;
  std::printf("streamed chunk (servelab-load, once per chunk):\n");
  for (const std::string* chunk : {&kTokenChunk, &kUsageChunk}) {
    const char* what = chunk == &kTokenChunk ? "token chunk" : "usage chunk";
    const simdjson::padded_string padded(*chunk);
    const loadgen::StreamChunk ours = ChunkOurs(*chunk);
    if (!SameChunk(ours, ChunkRapid(*chunk)) || !SameChunk(ours, ChunkSimd(chunk_parser, padded))) {
      std::printf("  %s: the readers disagree\n", what);
      ++mismatches;
    }
    const double ns = NsPerRead(seconds, [&] { ChunkOurs(*chunk); });
    Row(what, "ParseStreamChunk (simdjson DOM)", ns, ns);
    Row(what, "RapidJSON (DOM)", NsPerRead(seconds, [&] { ChunkRapid(*chunk); }), ns);
    Row(what, "simdjson (on demand)", NsPerRead(seconds, [&] { ChunkSimd(chunk_parser, padded); }),
        ns);
  }

  sim::SimConfig config;
  const std::string body = RequestBody(config.model, prompt_tokens);
  const simdjson::padded_string padded(body);
  std::printf("completion request, %d-token prompt, %zu bytes (servelab-sim, once per leg):\n",
              prompt_tokens, body.size());
  const sim::GenerationRequest ours = RequestOurs(sim::ParseJsonByHand, body, config);
  if (static_cast<int>(ours.prompt_tokens.size()) != prompt_tokens ||
      !SameRequest(ours, RequestOurs(sim::ParseJson, body, config)) ||
      !SameRequest(ours, RequestRapid(body)) ||
      !SameRequest(ours, RequestSimd(request_parser, padded))) {
    std::printf("  request: the readers disagree\n");
    ++mismatches;
  }
  const double ns = NsPerRead(seconds, [&] { RequestOurs(sim::ParseJsonByHand, body, config); });
  Row("request", "by hand (ParseJsonByHand)", ns, ns);
  Row("request", "  of which the JSON",
      NsPerRead(seconds, [&] { (void)sim::ParseJsonByHand(body); }), ns);
  Row("request", "simdjson+JsonValue (ParseJson)",
      NsPerRead(seconds, [&] { RequestOurs(sim::ParseJson, body, config); }), ns);
  Row("request", "  of which the JSON", NsPerRead(seconds, [&] { (void)sim::ParseJson(body); }),
      ns);
  Row("request", "RapidJSON (DOM)", NsPerRead(seconds, [&] { RequestRapid(body); }), ns);
  Row("request", "simdjson (DOM)", NsPerRead(seconds, [&] { RequestSimd(request_parser, padded); }),
      ns);
  return mismatches == 0 ? 0 : 1;
}
