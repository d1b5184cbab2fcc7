#include "loadgen/sse.h"

#include <charconv>

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

// A minimal JSON reader over the chunk: walks the structure, extracting only
// the fields we need and skipping everything else without allocating.
class Reader {
 public:
  explicit Reader(absl::string_view s) : s_(s) {}

  bool ok() const { return ok_; }
  void Fail() { ok_ = false; }

  void Ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) {
      ++pos_;
    }
  }
  bool Peek(char c) {
    Ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool Eat(char c) {
    if (!Peek(c)) return false;
    ++pos_;
    return true;
  }
  // The raw (still escaped) contents of a string.
  absl::string_view String() {
    if (!Eat('"')) {
      Fail();
      return {};
    }
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != '"') pos_ += s_[pos_] == '\\' ? 2 : 1;
    if (pos_ >= s_.size()) {
      Fail();
      return {};
    }
    return s_.substr(start, pos_++ - start);
  }
  int64_t Int() {
    Ws();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
    if (ec != std::errc()) {
      SkipValue();  // A float or null where an int was expected: not fatal.
      return 0;
    }
    pos_ = static_cast<size_t>(p - s_.data());
    // Skip a fraction or exponent if present.
    while (pos_ < s_.size() &&
           (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E' || s_[pos_] == '+' ||
            s_[pos_] == '-' || (s_[pos_] >= '0' && s_[pos_] <= '9'))) {
      ++pos_;
    }
    return v;
  }
  void SkipValue(int depth = 0) {
    Ws();
    if (pos_ >= s_.size() || depth > 64) return Fail();
    char c = s_[pos_];
    if (c == '"') {
      String();
    } else if (c == '{') {
      ForEachKey([&](absl::string_view) { SkipValue(depth + 1); });
    } else if (c == '[') {
      ForEachItem([&](int) { SkipValue(depth + 1); });
    } else {
      while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != '}' && s_[pos_] != ']' &&
             s_[pos_] != ' ') {
        ++pos_;
      }
    }
  }
  // Calls f(key) with the reader at the key's value; f must consume it.
  template <typename F>
  void ForEachKey(F f) {
    if (!Eat('{')) return Fail();
    if (Eat('}')) return;
    while (ok_) {
      absl::string_view key = String();
      if (!ok_ || !Eat(':')) return Fail();
      f(key);
      if (Eat(',')) continue;
      if (!Eat('}')) Fail();
      return;
    }
  }
  template <typename F>
  void ForEachItem(F f) {
    if (!Eat('[')) return Fail();
    if (Eat(']')) return;
    for (int i = 0; ok_; ++i) {
      f(i);
      if (Eat(',')) continue;
      if (!Eat(']')) Fail();
      return;
    }
  }

 private:
  absl::string_view s_;
  size_t pos_ = 0;
  bool ok_ = true;
};

void ReadUsage(Reader& r, StreamChunk& c) {
  if (!r.Peek('{')) return r.SkipValue();  // null
  c.has_usage = true;
  r.ForEachKey([&](absl::string_view key) {
    if (key == "prompt_tokens") {
      c.prompt_tokens = static_cast<int32_t>(r.Int());
    } else if (key == "completion_tokens") {
      c.completion_tokens = static_cast<int32_t>(r.Int());
    } else if (key == "prompt_tokens_details" && r.Peek('{')) {
      r.ForEachKey([&](absl::string_view k) {
        if (k == "cached_tokens") {
          c.cached_tokens = static_cast<int32_t>(r.Int());
        } else {
          r.SkipValue();
        }
      });
    } else {
      r.SkipValue();
    }
  });
}

void ReadChoice(Reader& r, StreamChunk& c, v1::Api api) {
  if (!r.Peek('{')) return r.SkipValue();
  r.ForEachKey([&](absl::string_view key) {
    if (api != v1::API_CHAT_COMPLETIONS && key == "text" && r.Peek('"')) {
      c.has_tokens = !r.String().empty();
    } else if (api == v1::API_CHAT_COMPLETIONS && key == "delta" && r.Peek('{')) {
      r.ForEachKey([&](absl::string_view k) {
        if (k == "content" && r.Peek('"')) {
          c.has_tokens = !r.String().empty();
        } else {
          r.SkipValue();
        }
      });
    } else {
      r.SkipValue();
    }
  });
}

// SGLang's /generate meta_info: running totals, cached_tokens always present.
void ReadMetaInfo(Reader& r, StreamChunk& c) {
  if (!r.Peek('{')) return r.SkipValue();
  c.has_usage = true;
  c.counts_are_cumulative = true;
  r.ForEachKey([&](absl::string_view key) {
    if (key == "prompt_tokens") {
      c.prompt_tokens = static_cast<int32_t>(r.Int());
    } else if (key == "completion_tokens") {
      c.completion_tokens = static_cast<int32_t>(r.Int());
    } else if (key == "cached_tokens") {
      c.cached_tokens = static_cast<int32_t>(r.Int());
    } else {
      r.SkipValue();
    }
  });
}

void ReadError(Reader& r, StreamChunk& c) {
  if (r.Peek('"')) {
    c.error = std::string(r.String());
    return;
  }
  if (!r.Peek('{')) return r.SkipValue();
  r.ForEachKey([&](absl::string_view key) {
    if (key == "message" && r.Peek('"')) {
      c.error = std::string(r.String());
    } else {
      r.SkipValue();
    }
  });
  if (c.error.empty()) c.error = "error chunk without a message";
}

}  // namespace

StreamChunk ParseStreamChunk(absl::string_view data, v1::Api api) {
  StreamChunk c;
  if (data == "[DONE]") {
    c.done = true;
    return c;
  }
  Reader r(data);
  r.ForEachKey([&](absl::string_view key) {
    if (key == "choices" && r.Peek('[')) {
      r.ForEachItem([&](int i) {
        if (i == 0) {
          ReadChoice(r, c, api);
        } else {
          r.SkipValue();
        }
      });
    } else if (key == "usage") {
      ReadUsage(r, c);
    } else if (key == "meta_info" && api == v1::API_GENERATE) {
      ReadMetaInfo(r, c);
    } else if (key == "error") {
      ReadError(r, c);
    } else {
      r.SkipValue();
    }
  });
  if (!r.ok()) {
    c = StreamChunk{};
    c.error = absl::StrCat("malformed stream chunk: ", data.substr(0, 200));
  }
  return c;
}

}  // namespace servelab::loadgen
