// Datasets: the prompts of a load, derived only from a DatasetSpec (plus a
// WarmupSpec for warmup sets), deterministic for a given seed.
//
//   SERVELAB_ASSIGN_OR_RETURN(PromptSet formal,
//                             loadgen::BuildPrompts(spec.workload().dataset(), n));
//   Prompt first = formal.Get(0);            // made now, from (seed, 0)
//   PromptShape lengths = formal.Shape(n - 1);  // its lengths, no token ids made
//
// Synthetic prompts are token-id arrays of exact length: input_tokens ±
// input_tokens_range (uniform), ids in [kMinTokenId, kMaxTokenId). With
// prefix_cache_ratio P > 0, request i belongs to group i % G (G =
// prefix_groups, default 1) and starts with its group's shared prefix of
// round(P * input_tokens) tokens; the rest is unique to the request. Once a
// group's prefix is cached, every request of the group hits ~P of its
// prompt. The cache-seed set has one request per group (the group prefix and
// a unique 16-token suffix, one output token). Warmup prompts come from a separate
// random stream and share no prefix with the formal set, so warming up does
// not seed the prefix cache.
//
// Every prompt depends on (seed, its index) only: the first k prompts are
// the same whatever the count. So a PromptSet makes a synthetic prompt only
// when asked for it: a load holds its group prefixes and the prompts in
// flight, never all N x ISL token ids (100,000 x 8,192 tokens would be
// 3.2 GB), and a plan reads lengths without making any id (docs/design.md §10).
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
#include <memory>
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

// A prompt's lengths without its token ids.
struct PromptShape {
  int32_t input_tokens = 0;  // 0: unknown (a text prompt)
  int32_t output_tokens = 0;
};

// The prompts of one load, in order. Synthetic prompts are made on Get;
// a prompt file's are held as read. Copies share their state (immutable).
// Thread-safe for concurrent const calls.
class PromptSet {
 public:
  struct Synthetic;  // How to make prompt i (dataset.cc).

  PromptSet() = default;  // No prompts.
  // `count` prompts taken in order from `list`, repeated as needed; `list`
  // must not be empty when count > 0.
  static PromptSet FromList(std::vector<Prompt> list, int count);
  // `count` synthetic prompts; only dataset.cc can describe one.
  static PromptSet FromSynthetic(std::shared_ptr<const Synthetic> synthetic, int count);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Prompt i, token ids included. i < size().
  Prompt Get(size_t i) const;
  // Prompt i's lengths, made without its ids. i < size().
  PromptShape Shape(size_t i) const;
  // Every prompt at once: for tests and small sets.
  std::vector<Prompt> All() const;

 private:
  std::shared_ptr<const Synthetic> synthetic_;
  std::shared_ptr<const std::vector<Prompt>> list_;
  size_t size_ = 0;
};

// Checks a dataset spec without building anything.
absl::Status ValidateDatasetSpec(const v1::DatasetSpec& spec);

// The formal (or any other load's) prompts, `count` of them.
absl::StatusOr<PromptSet> BuildPrompts(const v1::DatasetSpec& spec, int count);

// One request per prefix group, one output token each; empty when the spec
// has no shared prefix (prefix_cache_ratio 0) or uses a prompt file.
absl::StatusOr<PromptSet> BuildCacheSeedPrompts(const v1::DatasetSpec& spec);

// warmup.requests prompts of warmup.input_tokens / warmup.output_tokens
// (each falling back to the dataset's length when 0).
absl::StatusOr<PromptSet> BuildWarmupPrompts(const v1::DatasetSpec& spec,
                                             const v1::WarmupSpec& warmup);

// The prompts of a JSONL file (see above).
absl::StatusOr<std::vector<Prompt>> ReadPromptFile(const std::string& path,
                                                   int32_t default_output_tokens);

}  // namespace servelab::loadgen

#endif  // SERVELAB_LOADGEN_DATASET_H_
