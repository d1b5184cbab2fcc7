// Counter-based randomness: a value depends only on (seed, stream, index),
// so every prompt and arrival can be derived independently and the same seed
// gives the same load on every platform (no std:: distributions, whose
// output differs between standard libraries).
#ifndef SERVELAB_LOADGEN_RANDOM_H_
#define SERVELAB_LOADGEN_RANDOM_H_

#include <cstdint>

namespace servelab::loadgen {

// SplitMix64 finalizer.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A small sequential generator for one (seed, stream, index) key.
class KeyedRandom {
 public:
  KeyedRandom(uint64_t seed, uint64_t stream, uint64_t index)
      : state_(Mix64(Mix64(Mix64(seed) ^ stream) ^ index)) {}

  uint64_t Next() { return Mix64(state_++); }
  // Uniform in [0, 1).
  double NextDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in [lo, hi] (inclusive); lo <= hi.
  int64_t Uniform(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }

 private:
  uint64_t state_;
};

}  // namespace servelab::loadgen

#endif  // SERVELAB_LOADGEN_RANDOM_H_
