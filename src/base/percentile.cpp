#include "base/percentile.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace tally {

double percentile_of_sorted(std::span<const double> sorted, double q) {
  TALLY_CHECK(!sorted.empty(), "percentile of no samples");
  TALLY_CHECK(q >= 0.0 && q <= 1.0, "percentile {} outside [0, 1]", q);
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

}  // namespace tally
