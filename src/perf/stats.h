// Order statistics of repeated measurements (benchmark repetitions): a benchmark reports the
// median and the spread, never a single run.
#pragma once

#include <cstdint>
#include <span>

namespace tally::perf {

struct Stats {
  int64_t n = 0;  // samples; every other field is 0 when n == 0
  double min = 0.0;
  double p10 = 0.0;
  double median = 0.0;
  double p90 = 0.0;
  double max = 0.0;
  double mean = 0.0;
};

// Stats of `samples` (any order; not modified).
Stats stats_of(std::span<const double> samples);

// The q-quantile (q in [0, 1]) of sorted, non-empty samples, interpolating linearly between
// the two closest ranks: rank q * (n - 1), so q = 0.5 of an even count is the mean of the
// middle two.
double percentile_of_sorted(std::span<const double> sorted, double q);

}  // namespace tally::perf
