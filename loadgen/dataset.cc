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

// Synthetic prompt from `stream`/`index`, optionally starting with `prefix`.
Prompt Synthesize(const v1::DatasetSpec& spec, uint64_t stream, int index, int32_t input_tokens,
                  int32_t output_tokens, int32_t input_range, int32_t output_range,
                  const std::vector<int32_t>* prefix, int32_t group) {
  KeyedRandom lengths(spec.seed(), kLengthStream ^ (stream << 8), static_cast<uint64_t>(index));
  Prompt p;
  int32_t in = input_tokens;
  if (input_range > 0) in += static_cast<int32_t>(lengths.Uniform(-input_range, input_range));
  p.output_tokens = output_tokens;
  if (output_range > 0) {
    p.output_tokens += static_cast<int32_t>(lengths.Uniform(-output_range, output_range));
  }
  p.token_ids.reserve(static_cast<size_t>(in));
  if (prefix != nullptr) {
    p.token_ids = *prefix;
    p.prefix_group = group;
    p.prefix_tokens = static_cast<int32_t>(prefix->size());
  }
  KeyedRandom rng(spec.seed(), stream, static_cast<uint64_t>(index));
  AppendRandomIds(rng, in - static_cast<int32_t>(p.token_ids.size()), p.token_ids);
  return p;
}

}  // namespace

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

absl::StatusOr<std::vector<Prompt>> BuildPrompts(const v1::DatasetSpec& spec, int count) {
  if (absl::Status s = ValidateDatasetSpec(spec); !s.ok()) return s;
  if (count < 0) return absl::InvalidArgumentError("prompt count must be >= 0");
  std::vector<Prompt> prompts;
  if (!spec.file().path().empty()) {
    absl::StatusOr<std::vector<Prompt>> file =
        ReadPromptFile(spec.file().path(), spec.output_tokens());
    if (!file.ok()) return file.status();
    for (int i = 0; i < count; ++i)
      prompts.push_back((*file)[static_cast<size_t>(i) % file->size()]);
    return prompts;
  }
  std::vector<std::vector<int32_t>> prefixes;
  if (PrefixTokens(spec) > 0) {
    for (int32_t g = 0; g < Groups(spec); ++g) prefixes.push_back(GroupPrefix(spec, g));
  }
  prompts.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    int32_t group = prefixes.empty() ? -1 : i % Groups(spec);
    prompts.push_back(Synthesize(spec, kRequestStream, i, spec.input_tokens(), spec.output_tokens(),
                                 spec.input_tokens_range(), spec.output_tokens_range(),
                                 group >= 0 ? &prefixes[static_cast<size_t>(group)] : nullptr,
                                 group));
  }
  return prompts;
}

absl::StatusOr<std::vector<Prompt>> BuildCacheSeedPrompts(const v1::DatasetSpec& spec) {
  if (absl::Status s = ValidateDatasetSpec(spec); !s.ok()) return s;
  std::vector<Prompt> prompts;
  if (!spec.file().path().empty() || PrefixTokens(spec) == 0) return prompts;
  for (int32_t g = 0; g < Groups(spec); ++g) {
    std::vector<int32_t> prefix = GroupPrefix(spec, g);
    prompts.push_back(Synthesize(spec, kSeedStream, g, spec.input_tokens(), 1, 0, 0, &prefix, g));
  }
  return prompts;
}

absl::StatusOr<std::vector<Prompt>> BuildWarmupPrompts(const v1::DatasetSpec& spec,
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
  std::vector<Prompt> prompts;
  for (int i = 0; i < warmup.requests(); ++i) {
    prompts.push_back(Synthesize(lengths, kWarmupStream, i, lengths.input_tokens(),
                                 lengths.output_tokens(), 0, 0, nullptr, -1));
  }
  return prompts;
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
