// Activation quantization (matmul_act.cpp) on AVX2, giving the scalar code's bytes exactly:
// the block maximum ignores NaNs as std::max does (maxps returns its second operand when the
// first is NaN), the scale and its inverse are the same scalar divisions, x * (1/d) is one
// IEEE multiply per lane and cvtps2dq rounds to nearest even like cvtss2si, with the same
// INT_MIN for NaN and the same clamp to [-127, 127].
#include <immintrin.h>

#include "backend/cpu/matmul_kernels.h"

namespace tally::cpu::detail {

namespace {

// max(|x[i]|) over n (a multiple of 8) values, NaNs skipped.
float block_amax(const float* x, int n) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8)
    m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask), m);
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// 32 values times id, rounded and clamped, into q[0..32); v[4] keeps the int32 values.
void quantize32(const float* x, __m256 id, int8_t* q, __m256i* v) {
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  for (int j = 0; j < 4; ++j) {
    const __m256i r = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * j), id));
    v[j] = _mm256_max_epi32(_mm256_min_epi32(r, hi), lo);
  }
  // packs interleave 128-bit halves: dwords come out as v0a v1a v2a v3a v0b v1b v2b v3b.
  const __m256i p =
      _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q),
                      _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

__m256 inverse_scale(float amax, float* d) {
  *d = amax / 127.0f;
  return _mm256_set1_ps(*d > 0.0f ? 1.0f / *d : 0.0f);
}

}  // namespace

void act_quantize_row32_avx2(const float* x, int64_t n_in, int8_t* q, float* d, int16_t* sums) {
  for (int64_t b = 0; b < n_in / kActBlock; ++b) {
    const float* xb = x + b * kActBlock;
    const __m256 id = inverse_scale(block_amax(xb, kActBlock), d + b);
    __m256i v[4];
    quantize32(xb, id, q + b * kActBlock, v);
    sums[b] = static_cast<int16_t>(
        hsum_i32(_mm256_add_epi32(_mm256_add_epi32(v[0], v[1]), _mm256_add_epi32(v[2], v[3]))));
  }
}

void act_quantize_row_k_avx2(const float* x, int64_t n_in, int8_t* q, float* d, int16_t* sums) {
  for (int64_t b = 0; b < n_in / kActBlockK; ++b) {
    const float* xb = x + b * kActBlockK;
    const __m256 id = inverse_scale(block_amax(xb, kActBlockK), d + b);
    int16_t* s = sums + b * (kActBlockK / kActSumGroup);
    for (int j = 0; j < kActBlockK / 32; ++j) {
      __m256i v[4];
      quantize32(xb + 32 * j, id, q + b * kActBlockK + 32 * j, v);
      s[2 * j] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(v[0], v[1])));
      s[2 * j + 1] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(v[2], v[3])));
    }
  }
}

}  // namespace tally::cpu::detail
