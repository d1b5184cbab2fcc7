// Datasets: the prompts of a load, derived only from a DatasetSpec (plus a
// WarmupSpec for warmup sets), deterministic for a given seed.
//
//   SERVELAB_ASSIGN_OR_RETURN(std::vector<Prompt> formal,
//                             loadgen::BuildPrompts(spec.workload().dataset(), n));
//   SERVELAB_ASSIGN_OR_RETURN(std::vector<Prompt> seeds,
//                             loadgen::BuildCacheSeedPrompts(spec.workload().dataset()));
//
// Synthetic prompts are token-id arrays of exact length: input_tokens ±
// input_tokens_range (uniform), ids in [kMinTokenId, kMaxTokenId). With
// prefix_cache_ratio P > 0, request i belongs to group i % G (G =
// prefix_groups, default 1) and starts with its group's shared prefix of
// round(P * input_tokens) tokens; the rest is unique to the request. Once a
// group's prefix is cached, every request of the group hits ~P of its
// prompt. The cache-seed set has one request per group (the group prefix and
// a unique suffix, one output token). Warmup prompts come from a separate
// random stream and share no prefix with the formal set, so warming up does
// not seed the prefix cache.
//
// Every prompt depends on (seed, its index) only: the first k prompts are
// the same whatever the count.
//
// A JSONL prompt file (dataset.file.path) has one object per line:
//   {"prompt": [101, 2023, ...], "output_tokens": 128}   token ids, or
//   {"prompt": "some text"}                              text
// `output_tokens` is optional (default dataset.output_tokens). The file's
// prompts are used in order, repeated when fewer than the count.
//
// Errors: INVALID_ARGUMENT naming the spec field (e.g.
// "workload.dataset.prefix_cache_ratio must be in [0, 1)"), NOT_FOUND for a
// missing prompt file. Pure functions; thread-compatible.
#ifndef SERVELAB_LOADGEN_DATASET_H_
#define SERVELAB_LOADGEN_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::loadgen {

inline constexpr int32_t kMinTokenId = 100;
// Below every common vocabulary size (and the sim's 50,000).
inline constexpr int32_t kMaxTokenId = 32000;

struct Prompt {
  // Exactly the input length; empty for a text prompt.
  std::vector<int32_t> token_ids;
  // Only for text prompts from a file.
  std::string text;
  int32_t output_tokens = 0;
  // Shared-prefix group, -1 for none.
  int32_t prefix_group = -1;
  // Tokens shared with the group (0 for none).
  int32_t prefix_tokens = 0;

  // The asked input length: token_ids.size(), or 0 (unknown) for text.
  int32_t input_tokens() const { return static_cast<int32_t>(token_ids.size()); }
};

// Checks a dataset spec without building anything.
absl::Status ValidateDatasetSpec(const v1::DatasetSpec& spec);

// The formal (or any other load's) prompts, `count` of them.
absl::StatusOr<std::vector<Prompt>> BuildPrompts(const v1::DatasetSpec& spec, int count);

// One request per prefix group, one output token each; empty when the spec
// has no shared prefix (prefix_cache_ratio 0) or uses a prompt file.
absl::StatusOr<std::vector<Prompt>> BuildCacheSeedPrompts(const v1::DatasetSpec& spec);

// warmup.requests prompts of warmup.input_tokens / warmup.output_tokens
// (each falling back to the dataset's length when 0).
absl::StatusOr<std::vector<Prompt>> BuildWarmupPrompts(const v1::DatasetSpec& spec,
                                                       const v1::WarmupSpec& warmup);

// The prompts of a JSONL file (see above).
absl::StatusOr<std::vector<Prompt>> ReadPromptFile(const std::string& path,
                                                   int32_t default_output_tokens);

}  // namespace servelab::loadgen

#endif  // SERVELAB_LOADGEN_DATASET_H_
