// AVX2 + FMA + F16C kernels (built with those flags; called only after run-time dispatch).
// Float weights: eight fma lanes per (row, token) exactly as matmul_scalar.cpp orders them,
// four rows by two tokens at a time so each weight vector is loaded and converted once for
// both tokens (4 x 3, which the 16 ymm just hold, measured slower on Zen 5 under AVX2).
// Quantized weights: maddubs + madd integer dots, Q8_0 / Q4_0 over the interleaved layout
// (matmul_interleaved_simd.h), the K-quants in matmul_simd_quant.h (fewer than 8 tokens) and
// matmul_gemm_kquant_ymm.h (the GEMM, from 8 tokens), Q4_1 / Q5_0 / Q5_1 / IQ4_NL in
// matmul_simd_block32.h (fewer than 8 tokens) and matmul_gemm_block32_ymm.h (the GEMM).
#include <immintrin.h>

#include "backend/cpu/matmul_gemm_block32_ymm.h"
#include "backend/cpu/matmul_gemm_kquant_ymm.h"
#include "backend/cpu/matmul_interleaved_simd.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_block32.h"
#include "backend/cpu/matmul_simd_iq4.h"
#include "backend/cpu/matmul_simd_k16.h"
#include "backend/cpu/matmul_simd_quant.h"
#include "tensor/half.h"

namespace tally::cpu::detail {

namespace {

struct Avx2Dot {
  // The dot's pairs pass through int16 (vpmaddubsw): they may saturate, and dot_scaled's
  // scale rides on the vpmaddwd for free (matmul_gemm_kquant_ymm.h).
  static constexpr bool kInt16Pairs = true;
  // maddubs: u8 * s8 pairs into int16. No saturation for any weight type here: the largest
  // pair is 2 * 128 * 127 (Q8_0 with |w| = 128 and activations within +-127).
  static __m256i dot(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }
  static __m256i dot_scaled(__m256i u, __m256i s, __m256i scale16) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scale16);
  }
  // Interleaved Q4_0: a block's 8 maddubs of quants 0..15 against |x| <= 127 sum to at most
  // 8 * 2 * 15 * 127 = 30480 per int16 lane, so the block accumulates in int16.
  using Q4Acc = __m256i;
  static __m256i q4_zero() { return _mm256_setzero_si256(); }
  static __m256i q4_step(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi16(acc, _mm256_maddubs_epi16(u, s));
  }
  // Pairs of int16 lanes summed into int32 with shifts, not vpmaddwd: the multiply ports
  // already carry the block's 8 vpmaddubsw, and the shift ports are idle.
  static __m256i q4_finish(__m256i acc) {
    return _mm256_add_epi32(_mm256_srai_epi32(_mm256_slli_epi32(acc, 16), 16),
                            _mm256_srai_epi32(acc, 16));
  }
  // Interleaved Q8_0: pairs reach 2 * 128 * 127, so each step widens to int32 at once.
  static __m256i q8_step(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, dot(u, s));
  }
};

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

// R weight rows x T tokens. x: token t at x + t * n. y: y[t * n_out + r].
template <class Load, int R, int T>
void float_block(const uint8_t* const* rows, const float* x, int64_t n, float* y, int64_t n_out) {
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
      float s = simd::reduce_acc(acc[r][t]);
      for (int64_t k = n8; k < n; ++k) s = fma_f32(Load::at(rows[r], k), x[t * n + k], s);
      y[t * n_out + r] = s;
    }
  }
}

// Tokens [t0, t_end) against R rows from o.
template <class Load, int R>
void float_rows(const MatmulTile& tile, int64_t o, int64_t t0, int64_t t_end) {
  const WeightMatrix& w = *tile.w;
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = w.data + (o + r) * w.row_bytes;
  int64_t t = t0;
  for (; t + 2 <= t_end; t += 2)
    float_block<Load, R, 2>(rows, tile.acts->x + t * w.n_in, w.n_in, tile.y + t * w.n_out + o,
                            w.n_out);
  if (t < t_end)
    float_block<Load, R, 1>(rows, tile.acts->x + t * w.n_in, w.n_in, tile.y + t * w.n_out + o,
                            w.n_out);
}

// Tokens in blocks of 8 (their f32 rows stay in L2) against the tile's rows, 4 at a time; a
// lone token (decode's matvec) takes 8 rows at a time, so that 8 independent fma chains hide
// the fma latency.
template <class Load>
void tile_float(const MatmulTile& tile) {
  constexpr int64_t kTokenBlock = 8;
  const int64_t n_tokens = tile.acts->n_tokens;
  const WeightMatrix& w = *tile.w;
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenBlock) {
    const int64_t t_end = t0 + kTokenBlock < n_tokens ? t0 + kTokenBlock : n_tokens;
    int64_t o = tile.row_begin;
    if (t_end - t0 == 1) {
      for (; o + 8 <= tile.row_end; o += 8) {
        const uint8_t* rows[8];
        for (int r = 0; r < 8; ++r) rows[r] = w.data + (o + r) * w.row_bytes;
        float_block<Load, 8, 1>(rows, tile.acts->x + t0 * w.n_in, w.n_in, tile.y + t0 * w.n_out + o,
                                w.n_out);
      }
    }
    for (; o + 4 <= tile.row_end; o += 4) float_rows<Load, 4>(tile, o, t0, t_end);
    for (; o < tile.row_end; ++o) float_rows<Load, 1>(tile, o, t0, t_end);
  }
}

// The super-block types: the GEMM from 8 tokens, the per-row kernels below.
template <class G, MatmulTileFn narrow>
constexpr MatmulTileFn kgemm = simd::tile_kgemm_ymm<G, Avx2Dot, narrow>;

// The 32-block types with per-row kernels: the GEMM from 8 tokens, those kernels below.
template <class Unpack>
constexpr MatmulTileFn block32 =
    simd::tile_b32gemm_ymm<Unpack, Avx2Dot, simd::tile_rows<simd::Block32Kernel<Avx2Dot, Unpack>>>;

}  // namespace

const MatmulKernels& matmul_kernels_avx2() {
  static const MatmulKernels k = {
      "avx2",
      tile_float<LoadF32>,
      tile_float<LoadF16>,
      tile_float<LoadBf16>,
      simd::tile_interleaved<Avx2Dot, simd::Q8_0x8>,
      simd::tile_interleaved<Avx2Dot, simd::Q4_0x8>,
      kgemm<simd::Q4KGemm, simd::tile_rows<simd::Q4KKernel<Avx2Dot>>>,
      kgemm<simd::Q6KGemm, simd::tile_rows<simd::Q6KKernel<Avx2Dot>>>,
      block32<simd::Q4_1Unpack>,
      block32<simd::Q5_0Unpack>,
      block32<simd::Q5_1Unpack>,
      kgemm<simd::K16Gemm<simd::Q2KUnpack>,
            simd::tile_rows<simd::K16Kernel<Avx2Dot, simd::Q2KUnpack>>>,
      kgemm<simd::K16Gemm<simd::Q3KUnpack>,
            simd::tile_rows<simd::K16Kernel<Avx2Dot, simd::Q3KUnpack>>>,
      kgemm<simd::Q5KGemm, simd::tile_rows<simd::Q4KKernel<Avx2Dot, BlockQ5_K>>>,
      block32<simd::IQ4NLUnpack>,
      simd::tile_rows<simd::IQ4XSKernel<Avx2Dot>>,  // no GEMM: its u8 form saturates vpmaddubsw
      act_quantize_row32_avx2,
      act_quantize_row_k_avx2,
  };
  return k;
}

}  // namespace tally::cpu::detail
