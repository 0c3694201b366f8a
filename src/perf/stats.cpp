#include "perf/stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"

namespace tally::perf {

double percentile_of_sorted(std::span<const double> sorted, double q) {
  TALLY_CHECK(!sorted.empty(), "percentile of no samples");
  TALLY_CHECK(q >= 0.0 && q <= 1.0, "percentile {} outside [0, 1]", q);
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

Stats stats_of(std::span<const double> samples) {
  Stats s;
  if (samples.empty()) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  s.n = static_cast<int64_t>(sorted.size());
  s.min = sorted.front();
  s.max = sorted.back();
  s.p10 = percentile_of_sorted(sorted, 0.10);
  s.median = percentile_of_sorted(sorted, 0.50);
  s.p90 = percentile_of_sorted(sorted, 0.90);
  double sum = 0.0;
  for (double v : sorted) sum += v;
  s.mean = sum / static_cast<double>(s.n);
  return s;
}

}  // namespace tally::perf
