#include "perf/stream_kernels.h"

namespace tally::perf::detail {

float stream_read_scalar(const float* x, size_t n) {
  // Eight independent sums, so the loop is bound by loads rather than by the add latency.
  float acc[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) acc[k] += x[i + k];
  }
  for (; i < n; ++i) acc[0] += x[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void stream_triad_scalar(float* a, const float* b, const float* c, float s, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

}  // namespace tally::perf::detail
