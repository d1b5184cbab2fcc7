#include "sim/prefix_cache.h"

#include <algorithm>

namespace servelab::sim {

PrefixCache::PrefixCache(int64_t block_size, int64_t capacity_blocks)
    : block_size_(block_size), capacity_blocks_(capacity_blocks) {}

std::vector<uint64_t> PrefixCache::BlockHashes(const std::vector<int64_t>& tokens,
                                               size_t max_blocks) const {
  std::vector<uint64_t> hashes;
  uint64_t h = 1469598103934665603ull;  // FNV-1a offset basis
  size_t blocks = std::min(tokens.size() / block_size_, max_blocks);
  hashes.reserve(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    for (int64_t i = 0; i < block_size_; ++i) {
      uint64_t t = static_cast<uint64_t>(tokens[b * block_size_ + i]);
      for (int k = 0; k < 8; ++k) {
        h ^= (t >> (8 * k)) & 0xFF;
        h *= 1099511628211ull;
      }
    }
    hashes.push_back(h);
  }
  return hashes;
}

void PrefixCache::Touch(uint64_t hash) {
  auto it = index_.find(hash);
  if (it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.push_front(hash);
  index_[hash] = lru_.begin();
  while (static_cast<int64_t>(lru_.size()) > capacity_blocks_) {
    index_.erase(lru_.back());
    lru_.pop_back();
  }
}

int64_t PrefixCache::Lookup(const std::vector<int64_t>& tokens) {
  if (tokens.empty()) return 0;
  size_t max_blocks = (tokens.size() - 1) / block_size_;
  int64_t matched = 0;
  for (uint64_t h : BlockHashes(tokens, max_blocks)) {
    if (index_.find(h) == index_.end()) break;
    Touch(h);
    ++matched;
  }
  return matched * block_size_;
}

void PrefixCache::Insert(const std::vector<int64_t>& tokens) {
  for (uint64_t h : BlockHashes(tokens, tokens.size())) Touch(h);
}

void PrefixCache::Clear() {
  lru_.clear();
  index_.clear();
}

}  // namespace servelab::sim
