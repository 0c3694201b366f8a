// Float weights (F32, F16, BF16) on 256-bit fma (AVX2 + FMA + F16C): only matmul_avx2.cpp
// includes this (matmul_avxvnni.cpp and matmul_avx512.cpp take its kernels from that table).
//
// The canonical order (matmul_kernels.h) gives each (row, token) eight lanes, element k in lane
// k % 8: exactly one ymm accumulator per (row, token), fma(w[k..k+7], x[k..k+7], acc).
//  * One token (decode's matvec, memory-bound): 8 rows at a time, so that 8 independent fma
//    chains hide the fma latency.
//  * Several tokens: matmul_float_gemm.h's blocking (shared with the 512-bit GEMM) around a
//    register tile of kFloatYmmRows rows x kFloatYmmTokens tokens: per 8 elements each row's
//    weights are loaded and widened (F16C, or BF16's shift) once for all the tile's tokens,
//    each token's x once for all its rows.
#pragma once

#include <immintrin.h>

#include "backend/cpu/matmul_float_gemm.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_quant.h"
#include "tensor/half.h"

namespace tally::cpu::detail::simd {
// Internal linkage, as matmul_float_gemm.h.
namespace {

// Register tile of the several-token GEMM: 4 x 3 = 12 accumulators (12 chains in flight for
// the fma latency), 3 x vectors and one widened weight vector: all 16 ymm. One core of Zen 5
// under TALLY_ISA=avx2, f16 in cache (n_in 2048 and 5632, 32 rows x 64-512 tokens): 104-112
// GFLOP/s, against 88-94 for 6 x 2 and 3 x 4 and 84-93 for the 4 x 2 tile before.
inline constexpr int kFloatYmmRows = 4;
inline constexpr int kFloatYmmTokens = 3;
// Tokens per block: their f32 rows (8 KiB each at n_in 2048) stay in L2 while the tile's row
// panels take turns in L1.
inline constexpr int64_t kFloatYmmTokenBlock = 32;

struct LoadF32 {
  static __m256 vec(const uint8_t* row, int64_t k) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k);
  }
  static float at(const uint8_t* row, int64_t k) { return reinterpret_cast<const float*>(row)[k]; }
};
struct LoadF16 {
  static __m256 vec(const uint8_t* row, int64_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
  }
  static float at(const uint8_t* row, int64_t k) {
    return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]);
  }
};
struct LoadBf16 {
  static __m256 vec(const uint8_t* row, int64_t k) {
    const __m256i h =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
  static float at(const uint8_t* row, int64_t k) {
    return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]);
  }
};

// R weight rows x T tokens. x: token t at x + t * n. y: y[t * n_out + r]. A function of its
// own: inlined into the loops around it, the 4 x 3 tile (all 16 ymm) ran at half the speed
// (59 against 111 GFLOP/s in the measurement above).
template <class Load, int R, int T>
[[gnu::noinline]] void float_block(const uint8_t* const* rows, const float* x, int64_t n,
                                   float* y, int64_t n_out) {
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const int64_t n8 = n & ~int64_t{7};
  for (int64_t k = 0; k < n8; k += 8) {
    __m256 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm256_loadu_ps(x + t * n + k);
    for (int r = 0; r < R; ++r) {
      const __m256 wv = Load::vec(rows[r], k);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float s = reduce_acc(acc[r][t]);
      for (int64_t k = n8; k < n; ++k) s = fma_f32(Load::at(rows[r], k), x[t * n + k], s);
      y[t * n_out + r] = s;
    }
  }
}

// R rows from o against token t.
template <class Load, int R>
[[gnu::always_inline]] static inline void float_rows_one_token(const MatmulTile& tile, int64_t o,
                                                               int64_t t) {
  const WeightMatrix& w = *tile.w;
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = w.data + (o + r) * w.row_bytes;
  float_block<Load, R, 1>(rows, tile.acts->x + t * w.n_in, w.n_in, tile.y + t * w.n_out + o,
                          w.n_out);
}

// Each token alone (in practice one: decode), the tile's rows 8 at a time, then 4, then 1.
template <class Load>
void tile_float_one_token(const MatmulTile& tile) {
  for (int64_t t = 0; t < tile.acts->n_tokens; ++t) {
    int64_t o = tile.row_begin;
    for (; o + 8 <= tile.row_end; o += 8) float_rows_one_token<Load, 8>(tile, o, t);
    for (; o + 4 <= tile.row_end; o += 4) float_rows_one_token<Load, 4>(tile, o, t);
    for (; o < tile.row_end; ++o) float_rows_one_token<Load, 1>(tile, o, t);
  }
}

// The register tile for tile_float_gemm (matmul_float_gemm.h).
template <class Load>
struct FloatYmm {
  static constexpr int kPanelRows = kFloatYmmRows;
  static constexpr int kStepRows = 1;
  static constexpr int kTokens = kFloatYmmTokens;
  static constexpr int64_t kTokenBlock = kFloatYmmTokenBlock;
  template <int Rows, int T>
  static void block(const uint8_t* const* rows, const float* x, int64_t n, float* y,
                    int64_t n_out) {
    float_block<Load, Rows, T>(rows, x, n, y, n_out);
  }
};

template <class Load>
void tile_float_ymm(const MatmulTile& tile) {
  tile_float_gemm<FloatYmm<Load>>(tile, tile_float_one_token<Load>);
}

}  // namespace
}  // namespace tally::cpu::detail::simd
