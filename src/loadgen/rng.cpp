#include "loadgen/rng.h"

#include <cmath>

#include "base/check.h"

namespace tally::loadgen {

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

int64_t Rng::uniform_int(int64_t lo, int64_t hi) {
  TALLY_CHECK(lo <= hi, "uniform_int({}, {})", lo, hi);
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  if (span == 0) return static_cast<int64_t>(next());  // the whole 64-bit range
  // Rejection keeps every value equally likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % span;
  uint64_t v = next();
  while (v >= limit) v = next();
  return lo + static_cast<int64_t>(v % span);
}

double Rng::normal() {
  // Box-Muller; 1 - u is in (0, 1], so the log is finite.
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double Rng::exponential(double rate) {
  TALLY_CHECK(rate > 0, "exponential rate {}", rate);
  return -std::log(1.0 - uniform()) / rate;
}

double Rng::gamma(double shape, double scale) {
  TALLY_CHECK(shape > 0 && scale > 0, "gamma({}, {})", shape, scale);
  if (shape < 1.0) {
    // Gamma(a) = Gamma(a + 1) * U^(1/a).
    const double u = 1.0 - uniform();
    return gamma(shape + 1.0, scale) * std::pow(u, 1.0 / shape);
  }
  // Marsaglia and Tsang's squeeze method.
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0;
    double v = 0;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1.0 - uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * scale;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v * scale;
  }
}

}  // namespace tally::loadgen
