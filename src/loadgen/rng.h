// The load generator's random numbers: a seeded mt19937_64 (its output is fixed by the C++
// standard) and samplers written here, so a seed gives the same workload and arrival times
// with any standard library.
#pragma once

#include <cstdint>
#include <random>

namespace tally::loadgen {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  uint64_t next() { return engine_(); }
  double uniform();                             // [0, 1), 53 random bits
  int64_t uniform_int(int64_t lo, int64_t hi);  // [lo, hi], both inclusive; lo <= hi
  double normal();                              // mean 0, standard deviation 1
  double exponential(double rate);              // mean 1 / rate; rate > 0
  double gamma(double shape, double scale);     // mean shape * scale; shape, scale > 0

 private:
  std::mt19937_64 engine_;
};

}  // namespace tally::loadgen
