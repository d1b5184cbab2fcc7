#include "loadgen/dataset.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "loadgen/random.h"

namespace servelab::loadgen {
namespace {

// Distinct random streams, so prefixes, suffixes, seeds and warmup never
// share token sequences by construction.
enum Stream : uint64_t {
  kPrefixStream = 1,
  kRequestStream = 2,
  kSeedStream = 3,
  kWarmupStream = 4,
  kLengthStream = 5,
};

int32_t PrefixTokens(const v1::DatasetSpec& spec) {
  return static_cast<int32_t>(std::lround(spec.prefix_cache_ratio() * spec.input_tokens()));
}

// A seed needs only its group's prefix and a few tokens of its own: prefix
// caches keep whole blocks, and a request hits the blocks its prefix fills,
// whatever came after them in the seed. Seeding the full prompt length
// would double the seed's prefill at a 50 % ratio for nothing.
constexpr int32_t kSeedSuffixTokens = 16;

int32_t Groups(const v1::DatasetSpec& spec) {
  return spec.prefix_groups() > 0 ? spec.prefix_groups() : 1;
}

void AppendRandomIds(KeyedRandom& rng, int32_t count, std::vector<int32_t>& out) {
  for (int32_t i = 0; i < count; ++i) {
    out.push_back(static_cast<int32_t>(rng.Uniform(kMinTokenId, kMaxTokenId - 1)));
  }
}

std::vector<int32_t> GroupPrefix(const v1::DatasetSpec& spec, int32_t group) {
  std::vector<int32_t> ids;
  KeyedRandom rng(spec.seed(), kPrefixStream, static_cast<uint64_t>(group));
  AppendRandomIds(rng, PrefixTokens(spec), ids);
  return ids;
}

}  // namespace

// Synthetic prompt i: from `stream` and index i, its lengths drawn from a
// stream of their own (so Shape makes no id), starting with prefix
// i % prefixes.size() when there are prefixes.
struct PromptSet::Synthetic {
  uint64_t seed = 0;
  uint64_t stream = 0;
  int32_t input_tokens = 0;
  int32_t output_tokens = 0;
  int32_t input_range = 0;
  int32_t output_range = 0;
  std::vector<std::vector<int32_t>> prefixes;

  PromptShape Lengths(size_t i) const {
    KeyedRandom lengths(seed, kLengthStream ^ (stream << 8), static_cast<uint64_t>(i));
    PromptShape shape{input_tokens, output_tokens};
    if (input_range > 0) {
      shape.input_tokens += static_cast<int32_t>(lengths.Uniform(-input_range, input_range));
    }
    if (output_range > 0) {
      shape.output_tokens += static_cast<int32_t>(lengths.Uniform(-output_range, output_range));
    }
    return shape;
  }

  Prompt Make(size_t i) const {
    const PromptShape shape = Lengths(i);
    Prompt p;
    p.output_tokens = shape.output_tokens;
    p.token_ids.reserve(static_cast<size_t>(shape.input_tokens));
    if (!prefixes.empty()) {
      const size_t group = i % prefixes.size();
      p.token_ids = prefixes[group];
      p.prefix_group = static_cast<int32_t>(group);
      p.prefix_tokens = static_cast<int32_t>(prefixes[group].size());
    }
    KeyedRandom rng(seed, stream, static_cast<uint64_t>(i));
    AppendRandomIds(rng, shape.input_tokens - static_cast<int32_t>(p.token_ids.size()),
                    p.token_ids);
    return p;
  }
};

PromptSet PromptSet::FromList(std::vector<Prompt> list, int count) {
  PromptSet set;
  set.list_ = std::make_shared<const std::vector<Prompt>>(std::move(list));
  set.size_ = static_cast<size_t>(std::max(count, 0));
  return set;
}

PromptSet PromptSet::FromSynthetic(std::shared_ptr<const Synthetic> synthetic, int count) {
  PromptSet set;
  set.synthetic_ = std::move(synthetic);
  set.size_ = static_cast<size_t>(std::max(count, 0));
  return set;
}

Prompt PromptSet::Get(size_t i) const {
  if (synthetic_) return synthetic_->Make(i);
  return (*list_)[i % list_->size()];
}

PromptShape PromptSet::Shape(size_t i) const {
  if (synthetic_) return synthetic_->Lengths(i);
  const Prompt& p = (*list_)[i % list_->size()];
  return PromptShape{p.input_tokens(), p.output_tokens};
}

std::vector<Prompt> PromptSet::All() const {
  std::vector<Prompt> all;
  all.reserve(size_);
  for (size_t i = 0; i < size_; ++i) all.push_back(Get(i));
  return all;
}

absl::Status ValidateDatasetSpec(const v1::DatasetSpec& spec) {
  if (spec.output_tokens() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.dataset.output_tokens must be > 0, got ", spec.output_tokens()));
  }
  if (spec.output_tokens_range() < 0 || spec.output_tokens_range() >= spec.output_tokens()) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.dataset.output_tokens_range must be in [0, output_tokens), got ",
                     spec.output_tokens_range()));
  }
  double ratio = spec.prefix_cache_ratio();
  if (!(ratio >= 0 && ratio < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.dataset.prefix_cache_ratio must be in [0, 1), got ", ratio));
  }
  if (spec.prefix_groups() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.dataset.prefix_groups must be >= 0, got ", spec.prefix_groups()));
  }
  if (!spec.file().path().empty()) return absl::OkStatus();
  if (spec.input_tokens() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.dataset.input_tokens must be > 0, got ", spec.input_tokens()));
  }
  if (spec.input_tokens_range() < 0 || spec.input_tokens_range() >= spec.input_tokens()) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.dataset.input_tokens_range must be in [0, input_tokens), got ",
                     spec.input_tokens_range()));
  }
  // Every request needs at least one token of its own after the shared prefix.
  if (PrefixTokens(spec) >= spec.input_tokens() - spec.input_tokens_range()) {
    return absl::InvalidArgumentError(absl::StrCat("workload.dataset.prefix_cache_ratio ", ratio,
                                                   " leaves no unique tokens in the shortest "
                                                   "prompt (input_tokens - input_tokens_range = ",
                                                   spec.input_tokens() - spec.input_tokens_range(),
                                                   ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PromptSet> BuildPrompts(const v1::DatasetSpec& spec, int count) {
  if (absl::Status s = ValidateDatasetSpec(spec); !s.ok()) return s;
  if (count < 0) return absl::InvalidArgumentError("prompt count must be >= 0");
  if (!spec.file().path().empty()) {
    absl::StatusOr<std::vector<Prompt>> file =
        ReadPromptFile(spec.file().path(), spec.output_tokens());
    if (!file.ok()) return file.status();
    return PromptSet::FromList(*std::move(file), count);
  }
  auto synthetic = std::make_shared<PromptSet::Synthetic>();
  synthetic->seed = spec.seed();
  synthetic->stream = kRequestStream;
  synthetic->input_tokens = spec.input_tokens();
  synthetic->output_tokens = spec.output_tokens();
  synthetic->input_range = spec.input_tokens_range();
  synthetic->output_range = spec.output_tokens_range();
  if (PrefixTokens(spec) > 0) {
    for (int32_t g = 0; g < Groups(spec); ++g) synthetic->prefixes.push_back(GroupPrefix(spec, g));
  }
  return PromptSet::FromSynthetic(std::move(synthetic), count);
}

absl::StatusOr<PromptSet> BuildCacheSeedPrompts(const v1::DatasetSpec& spec) {
  if (absl::Status s = ValidateDatasetSpec(spec); !s.ok()) return s;
  if (!spec.file().path().empty() || PrefixTokens(spec) == 0) return PromptSet();
  auto synthetic = std::make_shared<PromptSet::Synthetic>();
  synthetic->seed = spec.seed();
  synthetic->stream = kSeedStream;
  synthetic->input_tokens = PrefixTokens(spec) + kSeedSuffixTokens;
  synthetic->output_tokens = 1;
  for (int32_t g = 0; g < Groups(spec); ++g) synthetic->prefixes.push_back(GroupPrefix(spec, g));
  return PromptSet::FromSynthetic(std::move(synthetic), Groups(spec));
}

absl::StatusOr<PromptSet> BuildWarmupPrompts(const v1::DatasetSpec& spec,
                                             const v1::WarmupSpec& warmup) {
  if (warmup.requests() < 0) {
    return absl::InvalidArgumentError("deployment.warmup.requests must be >= 0");
  }
  v1::DatasetSpec lengths = spec;
  lengths.clear_file();
  lengths.set_prefix_cache_ratio(0);
  lengths.set_input_tokens_range(0);
  lengths.set_output_tokens_range(0);
  if (warmup.input_tokens() > 0) lengths.set_input_tokens(warmup.input_tokens());
  if (warmup.output_tokens() > 0) lengths.set_output_tokens(warmup.output_tokens());
  if (absl::Status s = ValidateDatasetSpec(lengths); !s.ok()) return s;
  auto synthetic = std::make_shared<PromptSet::Synthetic>();
  synthetic->seed = spec.seed();
  synthetic->stream = kWarmupStream;
  synthetic->input_tokens = lengths.input_tokens();
  synthetic->output_tokens = lengths.output_tokens();
  return PromptSet::FromSynthetic(std::move(synthetic), warmup.requests());
}

absl::StatusOr<std::vector<Prompt>> ReadPromptFile(const std::string& path,
                                                   int32_t default_output_tokens) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open prompt file ", path));
  std::vector<Prompt> prompts;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    google::protobuf::Struct obj;
    auto parsed = google::protobuf::util::JsonStringToMessage(line, &obj);
    std::string where = absl::StrCat(path, ":", line_no, ": ");
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "not a JSON object: ", parsed.ToString()));
    }
    auto it = obj.fields().find("prompt");
    if (it == obj.fields().end()) return absl::InvalidArgumentError(where + "missing \"prompt\"");
    Prompt p;
    p.output_tokens = default_output_tokens;
    const google::protobuf::Value& v = it->second;
    if (v.kind_case() == google::protobuf::Value::kStringValue) {
      p.text = v.string_value();
    } else if (v.kind_case() == google::protobuf::Value::kListValue) {
      for (const auto& id : v.list_value().values()) {
        if (id.kind_case() != google::protobuf::Value::kNumberValue) {
          return absl::InvalidArgumentError(where + "\"prompt\" list must hold token ids");
        }
        p.token_ids.push_back(static_cast<int32_t>(id.number_value()));
      }
    } else {
      return absl::InvalidArgumentError(where + "\"prompt\" must be a string or a list of ids");
    }
    if (auto o = obj.fields().find("output_tokens"); o != obj.fields().end()) {
      p.output_tokens = static_cast<int32_t>(o->second.number_value());
    }
    if (p.output_tokens <= 0)
      return absl::InvalidArgumentError(where + "output_tokens must be > 0");
    prompts.push_back(std::move(p));
  }
  if (prompts.empty())
    return absl::InvalidArgumentError(absl::StrCat("prompt file ", path, " is empty"));
  return prompts;
}

}  // namespace servelab::loadgen
