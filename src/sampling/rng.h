// The sampler's random numbers: xoshiro256** seeded through splitmix64, implemented here so
// that a seed gives the same stream on every platform and standard library (the std
// distributions are implementation-defined, so tally never uses them for sampling).
#pragma once

#include <cstdint>

namespace tally {

// splitmix64 (Steele, Lea, Flood 2014): one 64-bit state, +0x9e3779b97f4a7c15 per step.
// Used only to spread a user seed over xoshiro's 256-bit state.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();

 private:
  uint64_t state_;
};

// xoshiro256** 1.0 (Blackman, Vigna 2018): 256-bit state, period 2^256 - 1. The state is
// the first four outputs of SplitMix64(seed), which are never all zero.
// Not thread-safe; each request owns one.
class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed);
  // The raw state (not all zero), for reference vectors in tests.
  static Xoshiro256 from_state(uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3);

  uint64_t next_u64();
  // Uniform in [0, 1): the top 53 bits of next_u64() times 2^-53, so every value is exact.
  double next_double();

 private:
  Xoshiro256() = default;
  uint64_t s_[4] = {};
};

}  // namespace tally
