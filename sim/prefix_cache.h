// A block-granular prefix cache with LRU eviction, as vLLM's automatic prefix
// caching sees it: a prompt is split into full blocks of block_size tokens;
// block i is identified by a hash chained over blocks 0..i, so a block only
// hits when everything before it matched too.
//
//   PrefixCache cache(/*block_size=*/16, /*capacity_blocks=*/1024);
//   int64_t cached = cache.Lookup(tokens);  // tokens served from cache
//   cache.Insert(tokens);                   // after the prefill computed them
//
// Single-threaded: the owner (InstanceModel) serializes calls under its mutex.
#ifndef SERVELAB_SIM_PREFIX_CACHE_H_
#define SERVELAB_SIM_PREFIX_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace servelab::sim {

class PrefixCache {
 public:
  PrefixCache(int64_t block_size, int64_t capacity_blocks);

  // Number of leading prompt tokens found in the cache (a multiple of
  // block_size). Like vLLM, a full hit still recomputes the last token, so the
  // result is at most the largest block multiple below tokens.size(). Touches
  // the matched blocks (most recently used).
  int64_t Lookup(const std::vector<int64_t>& tokens);
  // Adds every full block of `tokens`, evicting least recently used blocks
  // beyond capacity.
  void Insert(const std::vector<int64_t>& tokens);
  void Clear();

  int64_t size_blocks() const { return static_cast<int64_t>(lru_.size()); }
  int64_t capacity_blocks() const { return capacity_blocks_; }

 private:
  std::vector<uint64_t> BlockHashes(const std::vector<int64_t>& tokens, size_t max_blocks) const;
  void Touch(uint64_t hash);

  const int64_t block_size_;
  const int64_t capacity_blocks_;
  std::list<uint64_t> lru_;  // front = most recently used
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> index_;
};

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_PREFIX_CACHE_H_
