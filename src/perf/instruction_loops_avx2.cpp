#include <immintrin.h>

#include "perf/instruction_loops.h"

namespace tally::perf::detail {

float fma_loop_avx2(int64_t iterations) {
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  __m256 acc[kLoopChains];
  for (int i = 0; i < kLoopChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  for (int64_t n = 0; n < iterations; ++n)
    for (int i = 0; i < kLoopChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 sum = acc[0];
  for (int i = 1; i < kLoopChains; ++i) sum = _mm256_add_ps(sum, acc[i]);
  return _mm256_cvtss_f32(sum);
}

int32_t dot_loop_avx2(int64_t iterations) {
  // The int8 dot of the AVX2 kernels: u8 x s8 pairs summed to int16 (vpmaddubsw), pairs of
  // those to int32 (vpmaddwd by ones), added to the accumulator. Each chain's input goes
  // through an empty asm so the compiler cannot compute one vpmaddubsw for all chains.
  const __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-5), ones = _mm256_set1_epi16(1);
  __m256i acc[kDotChainsAvx2];
  for (int i = 0; i < kDotChainsAvx2; ++i) acc[i] = _mm256_set1_epi32(i);
  for (int64_t n = 0; n < iterations; ++n) {
    for (int i = 0; i < kDotChainsAvx2; ++i) {
      __m256i ui = u;
      __asm__("" : "+x"(ui));
      const __m256i pairs = _mm256_madd_epi16(_mm256_maddubs_epi16(ui, s), ones);
      acc[i] = _mm256_add_epi32(acc[i], pairs);
    }
  }
  __m256i sum = acc[0];
  for (int i = 1; i < kDotChainsAvx2; ++i) sum = _mm256_add_epi32(sum, acc[i]);
  return _mm_cvtsi128_si32(_mm256_castsi256_si128(sum));
}

}  // namespace tally::perf::detail
