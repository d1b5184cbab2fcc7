#include "loadgen/sse.h"

#include <simdjson.h>

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"

namespace servelab::loadgen {

void SseParser::Feed(absl::string_view bytes,
                     absl::FunctionRef<void(absl::string_view data)> on_data) {
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    if (nl == absl::string_view::npos) {
      line_.append(bytes.data(), bytes.size());
      return;
    }
    absl::string_view line;
    if (line_.empty()) {
      line = bytes.substr(0, nl);  // Common case: no copy.
    } else {
      line_.append(bytes.data(), nl);
      line = line_;
    }
    bytes.remove_prefix(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      if (has_data_) on_data(data_);
      data_.clear();
      has_data_ = false;
    } else if (line.substr(0, 5) == "data:") {
      absl::string_view value = line.substr(5);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (has_data_) data_.push_back('\n');
      data_.append(value.data(), value.size());
      has_data_ = true;
    }  // Comments (":") and other fields (event, id, retry) carry nothing we use.
    line_.clear();
  }
}

namespace {

using simdjson::dom::element;
using simdjson::dom::object;

// A count as an int; a float is truncated, and a count that is no number
// (null) or does not fit an int32 is 0: a server's oddity here is not worth
// failing the request for, and the analysis cross-checks counts with chunks.
int32_t Count(element e) {
  double d = 0;
  if (int64_t i; e.get_int64().get(i) == simdjson::SUCCESS) {
    d = static_cast<double>(i);
  } else if (e.get_double().get(d) != simdjson::SUCCESS) {
    return 0;
  }
  if (!(d >= std::numeric_limits<int32_t>::min() && d <= std::numeric_limits<int32_t>::max())) {
    return 0;
  }
  return static_cast<int32_t>(d);
}

bool NonEmptyString(element e) {
  std::string_view s;
  return e.get_string().get(s) == simdjson::SUCCESS && !s.empty();
}

void ReadUsage(element e, StreamChunk& c) {
  object usage;
  if (e.get_object().get(usage) != simdjson::SUCCESS) return;  // null
  c.has_usage = true;
  for (auto [key, value] : usage) {
    if (key == "prompt_tokens") {
      c.prompt_tokens = Count(value);
    } else if (key == "completion_tokens") {
      c.completion_tokens = Count(value);
    } else if (object details; key == "prompt_tokens_details" &&
                               value.get_object().get(details) == simdjson::SUCCESS) {
      for (auto [k, v] : details) {
        if (k == "cached_tokens") c.cached_tokens = Count(v);
      }
    }
  }
}

void ReadChoice(element e, StreamChunk& c, v1::Api api) {
  object choice;
  if (e.get_object().get(choice) != simdjson::SUCCESS) return;
  for (auto [key, value] : choice) {
    if (api != v1::API_CHAT_COMPLETIONS && key == "text" && value.is_string()) {
      c.has_tokens = NonEmptyString(value);
    } else if (object delta; api == v1::API_CHAT_COMPLETIONS && key == "delta" &&
                             value.get_object().get(delta) == simdjson::SUCCESS) {
      for (auto [k, v] : delta) {
        if (k == "content" && v.is_string()) c.has_tokens = NonEmptyString(v);
      }
    }
  }
}

// SGLang's /generate meta_info: running totals, cached_tokens always present.
void ReadMetaInfo(element e, StreamChunk& c) {
  object meta;
  if (e.get_object().get(meta) != simdjson::SUCCESS) return;
  c.has_usage = true;
  c.counts_are_cumulative = true;
  for (auto [key, value] : meta) {
    if (key == "prompt_tokens") {
      c.prompt_tokens = Count(value);
    } else if (key == "completion_tokens") {
      c.completion_tokens = Count(value);
    } else if (key == "cached_tokens") {
      c.cached_tokens = Count(value);
    }
  }
}

void ReadError(element e, StreamChunk& c) {
  if (std::string_view text; e.get_string().get(text) == simdjson::SUCCESS) {
    c.error = std::string(text);
    return;
  }
  object error;
  if (e.get_object().get(error) != simdjson::SUCCESS) return;  // null
  for (auto [key, value] : error) {
    std::string_view message;
    if (key == "message" && value.get_string().get(message) == simdjson::SUCCESS) {
      c.error = std::string(message);
    }
  }
  if (c.error.empty()) c.error = "error chunk without a message";
}

}  // namespace

StreamChunk ParseStreamChunk(absl::string_view data, v1::Api api) {
  StreamChunk c;
  if (data == "[DONE]") {
    c.done = true;
    return c;
  }
  // simdjson, about 4 times faster than the hand-written reader it replaced
  // (bench/json_bench; docs/design.md §10). One parser per thread keeps its
  // buffers between chunks.
  thread_local simdjson::dom::parser parser;
  object root;
  if (parser.parse(data.data(), data.size()).get_object().get(root) != simdjson::SUCCESS) {
    c.error = absl::StrCat("malformed stream chunk: ", data.substr(0, 200));
    return c;
  }
  for (auto [key, value] : root) {
    if (simdjson::dom::array choices;
        key == "choices" && value.get_array().get(choices) == simdjson::SUCCESS) {
      for (element first : choices) {
        ReadChoice(first, c, api);
        break;
      }
    } else if (key == "usage") {
      ReadUsage(value, c);
    } else if (key == "meta_info" && api == v1::API_GENERATE) {
      ReadMetaInfo(value, c);
    } else if (key == "error") {
      ReadError(value, c);
    }
  }
  return c;
}

}  // namespace servelab::loadgen
