#include "perf/stats.h"

#include <algorithm>
#include <vector>

namespace tally::perf {

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
