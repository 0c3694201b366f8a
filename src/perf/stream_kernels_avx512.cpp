#include <immintrin.h>

#include "perf/stream_kernels.h"

namespace tally::perf::detail {

float stream_read_avx512(const float* x, size_t n) {
  // Four 16-wide sums, 64 floats (four cache lines) per iteration.
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  __m512 a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
  }
  // Lanes summed through memory: GCC 12 warns (falsely) inside _mm512_reduce_add_ps.
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  float total = 0.0f;
  for (float v : lanes) total += v;
  for (; i < n; ++i) total += x[i];
  return total;
}

void stream_triad_avx512(float* a, const float* b, const float* c, float s, size_t n) {
  const __m512 vs = _mm512_set1_ps(s);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(a + i, _mm512_fmadd_ps(vs, _mm512_loadu_ps(c + i), _mm512_loadu_ps(b + i)));
  }
  for (; i < n; ++i) a[i] = b[i] + s * c[i];
}

}  // namespace tally::perf::detail
