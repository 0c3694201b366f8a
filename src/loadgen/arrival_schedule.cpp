#include "loadgen/arrival_schedule.h"

#include <cmath>

#include "base/check.h"
#include "loadgen/rng.h"

namespace tally::loadgen {

bool unlimited_rate(double request_rate) { return request_rate <= 0 || std::isinf(request_rate); }

std::vector<double> arrival_times(const ArrivalConfig& config, int n_requests) {
  TALLY_CHECK(config.burstiness > 0, "burstiness {}", config.burstiness);
  std::vector<double> times(static_cast<size_t>(std::max(n_requests, 0)), 0.0);
  if (unlimited_rate(config.request_rate)) return times;
  // A stream of its own (seed + a constant), so the schedule does not shift with the dataset.
  Rng rng(config.seed ^ 0x5eedA77170ULL);
  const double scale = 1.0 / (config.request_rate * config.burstiness);
  double t = 0;
  for (size_t i = 1; i < times.size(); ++i) {
    t += rng.gamma(config.burstiness, scale);
    times[i] = t;
  }
  return times;
}

}  // namespace tally::loadgen
