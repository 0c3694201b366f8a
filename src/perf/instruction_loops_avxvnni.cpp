#include <immintrin.h>

#include "perf/instruction_loops.h"

namespace tally::perf::detail {

int32_t dot_loop_avxvnni(int64_t iterations) {
  // AVX-VNNI's VEX vpdpbusd ymm: 32 u8 x s8 products a round into each accumulator.
  const __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-5);
  __m256i acc[kLoopChains];
  for (int i = 0; i < kLoopChains; ++i) acc[i] = _mm256_set1_epi32(i);
  for (int64_t n = 0; n < iterations; ++n)
    for (int i = 0; i < kLoopChains; ++i) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], u, s);
  __m256i sum = acc[0];
  for (int i = 1; i < kLoopChains; ++i) sum = _mm256_add_epi32(sum, acc[i]);
  return _mm_cvtsi128_si32(_mm256_castsi256_si128(sum));
}

}  // namespace tally::perf::detail
