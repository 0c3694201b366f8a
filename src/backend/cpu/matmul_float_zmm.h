// The many-token product of float weights (F32, F16, BF16) on 512-bit fma (AVX-512): only
// matmul_avx512.cpp includes this.
//
// The canonical order (matmul_kernels.h) gives each (row, token) eight lanes, element k in
// lane k % 8, so one dot product cannot use sixteen lanes. A zmm instead holds two rows' eight
// lanes side by side: [row r, elements k..k+7 | row r+1, elements k..k+7], multiplied by the
// token's x[k..k+7] broadcast to both halves (one vbroadcastf64x4 load). Each half is then
// exactly the 256-bit kernel's accumulator of its row: the same fma on the same lane values
// in the same order, so the same bits.
//
// Register tile: kFloatPairs row pairs (8 rows) x kFloatTokens tokens = 16 accumulators; the
// row pairs are loaded and widened to f32 once per 8 elements for the 4 tokens. The blocking
// around it is matmul_float_gemm.h's, shared with the 256-bit GEMM.
#pragma once

#include <immintrin.h>

#include "backend/cpu/matmul_float_gemm.h"
#include "backend/cpu/matmul_kernels.h"
#include "tensor/half.h"

namespace tally::cpu::detail::simd {
// Internal linkage: the emulated test (bench/matmul_avx512_emulated.cpp) instantiates the same
// templates with other flags, and the linker must never pick one copy for both.
namespace {

inline constexpr int kFloatPairs = 4;
inline constexpr int kFloatTokens = 4;
// Tokens per block: their f32 rows (8 KiB each at n_in 2048) stay in L2 while the tile's row
// panels take turns in L1.
inline constexpr int64_t kFloatTokenBlock = 32;

// Two 256-bit halves side by side (AVX512F; SIMDe emulates it, not every wider form).
[[gnu::always_inline]] static inline __m512 join_ps(__m256 lo, __m256 hi) {
  return _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
}

// Elements k..k+7 of rows a and b, as f32 in the low and high half.
struct PairF32 {
  static __m512 vec(const uint8_t* a, const uint8_t* b, int64_t k) {
    return join_ps(_mm256_loadu_ps(reinterpret_cast<const float*>(a) + k),
                   _mm256_loadu_ps(reinterpret_cast<const float*>(b) + k));
  }
  static float at(const uint8_t* row, int64_t k) { return reinterpret_cast<const float*>(row)[k]; }
};
// F16 halves widened with F16C (the AVX2 kernels' conversion: same values).
struct PairF16 {
  static __m512 vec(const uint8_t* a, const uint8_t* b, int64_t k) {
    return join_ps(
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 2 * k))),
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 * k))));
  }
  static float at(const uint8_t* row, int64_t k) {
    return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]);
  }
};
// BF16 halves: the bits shifted into the top of each f32, both rows in one 512-bit widening
// (3 instructions for 5; under SIMDe, which lacks it, in 256-bit halves as the AVX2 kernels
// do). F16 keeps two 256-bit conversions: one 512-bit vcvtph2ps was ~10% slower on Zen 5.
struct PairBf16 {
  static __m256 half(const uint8_t* row, int64_t k) {
    const __m256i h =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
  static __m512 vec(const uint8_t* a, const uint8_t* b, int64_t k) {
#ifdef __AVX512F__
    const __m256i h = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(b + 2 * k),
                                          reinterpret_cast<const __m128i*>(a + 2 * k));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
#else
    return join_ps(half(a, k), half(b, k));
#endif
  }
  static float at(const uint8_t* row, int64_t k) {
    return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]);
  }
};

// x[k..k+7] in both halves.
[[gnu::always_inline]] static inline __m512 broadcast_x8(const float* x) {
  return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_loadu_pd(reinterpret_cast<const double*>(x))));
}

// 2P rows from `rows` x T tokens (x: token t at x + t * n); y[t * n_out + r].
template <class Load, int P, int T>
void float_pairs(const uint8_t* const* rows, const float* x, int64_t n, float* y, int64_t n_out) {
  __m512 acc[P][T];
  for (int p = 0; p < P; ++p)
    for (int t = 0; t < T; ++t) acc[p][t] = _mm512_setzero_ps();
  const int64_t n8 = n & ~int64_t{7};
  for (int64_t k = 0; k < n8; k += 8) {
    __m512 wv[P];
    for (int p = 0; p < P; ++p) wv[p] = Load::vec(rows[2 * p], rows[2 * p + 1], k);
    for (int t = 0; t < T; ++t) {
      const __m512 xv = broadcast_x8(x + t * n + k);
      for (int p = 0; p < P; ++p) acc[p][t] = _mm512_fmadd_ps(wv[p], xv, acc[p][t]);
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int t = 0; t < T; ++t) {
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, acc[p][t]);
      for (int h = 0; h < 2; ++h) {
        float s = lanes8_reduce(lanes + 8 * h);
        for (int64_t k = n8; k < n; ++k) s = fma_f32(Load::at(rows[2 * p + h], k), x[t * n + k], s);
        y[t * n_out + 2 * p + h] = s;
      }
    }
  }
}

// The register tile for tile_float_gemm (matmul_float_gemm.h): row pairs, 4 pairs x 4 tokens.
template <class Load>
struct FloatZmm {
  static constexpr int kPanelRows = 2 * kFloatPairs;
  static constexpr int kStepRows = 2;  // one pair; a last odd row takes the 256-bit kernel
  static constexpr int kTokens = kFloatTokens;
  static constexpr int64_t kTokenBlock = kFloatTokenBlock;
  template <int Rows, int T>
  static void block(const uint8_t* const* rows, const float* x, int64_t n, float* y,
                    int64_t n_out) {
    float_pairs<Load, Rows / 2, T>(rows, x, n, y, n_out);
  }
};

// Several tokens: the tile's rows in panels of 2 * kFloatPairs, then pairs; a last odd row
// and a lone token take the 256-bit kernel `narrow` (same bits).
template <class Load>
void tile_float_zmm(const MatmulTile& tile, MatmulTileFn narrow) {
  tile_float_gemm<FloatZmm<Load>>(tile, narrow);
}

}  // namespace
}  // namespace tally::cpu::detail::simd
