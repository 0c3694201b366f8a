// The percentile rule every report in tally uses (bench repetitions, bench serve latencies).
#pragma once

#include <span>

namespace tally {

// The q-quantile (q in [0, 1], checked) of sorted, non-empty samples (checked), interpolating
// linearly between the two closest ranks: rank q * (n - 1), so q = 0.5 of an even count is the
// mean of the middle two (numpy's default "linear" method).
double percentile_of_sorted(std::span<const double> sorted, double q);

}  // namespace tally
