// GCC 12's AVX-512 intrinsics start from an undefined vector (`__m512 __Y = __Y;`), which
// -W(maybe-)uninitialized reports wherever they are inlined; set before <immintrin.h>.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "perf/instruction_loops.h"

namespace tally::perf::detail {

float fma_loop_avx512(int64_t iterations) {
  // acc = acc * 0.999 + 0.001 converges to 1: no overflow, no denormals to slow it down.
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  __m512 acc[kLoopChains];
  for (int i = 0; i < kLoopChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  for (int64_t n = 0; n < iterations; ++n)
    for (int i = 0; i < kLoopChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 sum = acc[0];
  for (int i = 1; i < kLoopChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_cvtss_f32(sum);
}

int32_t dot_loop_avx512(int64_t iterations) {
  // int32 lanes wrap around: fine, nothing reads the values.
  const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-5);
  __m512i acc[kLoopChains];
  for (int i = 0; i < kLoopChains; ++i) acc[i] = _mm512_set1_epi32(i);
  for (int64_t n = 0; n < iterations; ++n)
    for (int i = 0; i < kLoopChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], u, s);
  __m512i sum = acc[0];
  for (int i = 1; i < kLoopChains; ++i) sum = _mm512_add_epi32(sum, acc[i]);
  return _mm_cvtsi128_si32(_mm512_castsi512_si128(sum));
}

float bf16_loop_avx512(int64_t iterations) {
  // 0.5 * 0.001 per pair: the sums grow by ~0.03 per round, far from overflow.
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.5f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.001f), _mm512_set1_ps(0.001f));
  __m512 acc[kLoopChains];
  for (int i = 0; i < kLoopChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  for (int64_t n = 0; n < iterations; ++n)
    for (int i = 0; i < kLoopChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  __m512 sum = acc[0];
  for (int i = 1; i < kLoopChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_cvtss_f32(sum);
}

}  // namespace tally::perf::detail
