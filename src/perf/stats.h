// Order statistics of repeated measurements (benchmark repetitions): a benchmark reports the
// median and the spread, never a single run.
#pragma once

#include <cstdint>
#include <span>

#include "base/percentile.h"  // percentile_of_sorted, the rule Stats uses

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

}  // namespace tally::perf
