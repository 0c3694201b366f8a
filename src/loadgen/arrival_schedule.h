// When each request of a benchmark is sent: Poisson arrivals at a request rate (gaps drawn
// from a gamma distribution of shape `burstiness` and mean 1 / rate, as vLLM's bench serve
// does: burstiness 1 is Poisson, below 1 burstier, above 1 steadier), or all at once.
#pragma once

#include <cstdint>
#include <vector>

namespace tally::loadgen {

struct ArrivalConfig {
  double request_rate = 0;  // requests per second; 0 or infinity = all at time 0
  double burstiness = 1.0;  // gamma shape of the gaps; > 0
  uint64_t seed = 0;
};

bool unlimited_rate(double request_rate);

// Send times in seconds from the start, non-decreasing: the first request at 0, request i at
// the sum of i drawn gaps.
std::vector<double> arrival_times(const ArrivalConfig& config, int n_requests);

}  // namespace tally::loadgen
