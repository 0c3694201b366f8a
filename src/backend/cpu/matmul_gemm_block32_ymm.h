// The many-token GEMM of the 32-block types with per-row kernels (Q4_1, Q5_0, Q5_1, IQ4_NL) on
// 256-bit vectors: AVX2 (vpmaddubsw) and AVX2 + AVX-VNNI (vpdpbusd ymm); included by
// matmul_avx2.cpp and matmul_avxvnni.cpp, whose `Isa` policies give the integer dot.
//
// The 512-bit GEMM's unpacked form (matmul_gemm_block32_pack.h) and group loop
// (matmul_gemm_kquant_pack.h), read as the 256-bit super-block GEMM reads its own: a 64-byte
// line of 16 rows is two ymm (rows 0-7, 8-15), loaded once per 4-byte chunk for all the tile's
// tokens, each token's 4 activation bytes broadcast (matmul_gemm_kquant_ymm.h's chunks_ymm).
// Register tile: 16 rows x 4 tokens, 8 integer sums.
//   AVX2 (Isa::kInt16Pairs): vpmaddubsw pairs summed in int16 over as many chunks as cannot
//     overflow (kRun: Q4_1's quants <= 15 a whole block, Q5_0 / Q5_1's <= 31 half of one),
//     then widened to int32 (Isa::q4_finish). IQ4_NL's signed grid stays signed: |w| times x
//     with w's sign, as the per-row kernels do, widened every chunk (a pair reaches 32258).
//   AVX-VNNI: vpdpbusd into int32; IQ4_NL as grid + 128, its offset off as for Q5_0.
//
// Same bits as the per-row kernels and the scalar ones (matmul_kernels.h), as the 512-bit
// GEMM: a block's integer dot is exact (an offset comes off as kOffset * sum(x), from the
// quantizer's sums8), then block b enters lane b % 8 of each (row, token) through
// block32_lane_update's steps, and the eight lanes are reduced as lanes8_reduce does.
#pragma once

#include <immintrin.h>

#include "backend/cpu/matmul_gemm_block32_pack.h"
#include "backend/cpu/matmul_gemm_kquant_pack.h"
#include "backend/cpu/matmul_gemm_kquant_ymm.h"
#include "backend/cpu/matmul_interleaved_simd.h"
#include "backend/cpu/matmul_kernels.h"
#include "tensor/quant_blocks.h"

namespace tally::cpu::detail::simd {
// Internal linkage: compiled with different ISA flags (avx2, avx2-vnni).
namespace {

// Chunks whose vpmaddubsw pairs (each up to pair_max) an int16 sum may take: a power of two.
constexpr int block32_int16_run(int pair_max) {
  int run = kQBlock / 4;
  while (run > 1 && run * pair_max > 32767) run /= 2;
  return run;
}

template <class U, class Isa>
struct Block32GemmYmm : Block32Form<U, /*kSignedAsU8=*/!Isa::kInt16Pairs> {
  using Form = Block32Form<U, !Isa::kInt16Pairs>;
  static constexpr int kTokens = 4;
  static constexpr int kChunks = kQBlock / 4;
  static constexpr int kRun =
      Isa::kInt16Pairs ? block32_int16_run(2 * U::kMaxQuant * 127) : kChunks;
  static_assert(!Isa::kInt16Pairs || 2 * U::kMaxQuant * 127 <= 32767,
                "vpmaddubsw pairs would saturate");

  static void pack(const WeightMatrix& w, int64_t row0, int n_rows, uint8_t* dst) {
    Form::template pack<transpose16_epi32_ymm>(w, row0, n_rows, dst);
  }

  // A chunk's operands: the u8 weights and the s8 activations (signed weights: |w| and x
  // with w's sign).
  [[gnu::always_inline]] static inline __m256i u8_of(__m256i w) {
    if constexpr (Form::kStoredSigned) return _mm256_abs_epi8(w);
    return w;
  }
  [[gnu::always_inline]] static inline __m256i s8_of(__m256i xb, __m256i w) {
    if constexpr (Form::kStoredSigned) return _mm256_sign_epi8(xb, w);
    return xb;
  }

  // Block quants q (8 chunks of 16 rows) against T tokens' 32 activations: int32 dots.
  template <int T>
  [[gnu::always_inline]] static inline void block_dot(const uint8_t* q, const int8_t* const* xq,
                                                      __m256i (&dot)[T][2]) {
    if constexpr (kRun == 1) {
      for (int t = 0; t < T; ++t) dot[t][0] = dot[t][1] = _mm256_setzero_si256();
      chunks_ymm<T, kChunks>(
          q, xq, 0, [&](int t, __m256i w0, __m256i w1, __m256i xb) __attribute__((always_inline)) {
            dot[t][0] = keep(Isa::q8_step(dot[t][0], u8_of(w0), s8_of(xb, w0)));
            dot[t][1] = keep(Isa::q8_step(dot[t][1], u8_of(w1), s8_of(xb, w1)));
          });
    } else {
      for (int c0 = 0; c0 < kChunks; c0 += kRun) {
        typename Isa::Q4Acc s[T][2];
        for (int t = 0; t < T; ++t) s[t][0] = s[t][1] = Isa::q4_zero();
        chunks_ymm<T, kRun>(
            q, xq, c0,
            [&](int t, __m256i w0, __m256i w1, __m256i xb) __attribute__((always_inline)) {
              s[t][0] = keep(Isa::q4_step(s[t][0], u8_of(w0), s8_of(xb, w0)));
              s[t][1] = keep(Isa::q4_step(s[t][1], u8_of(w1), s8_of(xb, w1)));
            });
        for (int t = 0; t < T; ++t) {
          for (int z = 0; z < 2; ++z) {
            const __m256i f = Isa::q4_finish(s[t][z]);
            dot[t][z] = c0 == 0 ? f : _mm256_add_epi32(dot[t][z], f);
          }
        }
      }
    }
  }

  template <int T>
  static void tile(const uint8_t* packed, const MatmulTile& tile, int64_t row0, int n_rows,
                   int64_t t0) {
    const WeightMatrix& w = *tile.w;
    const int64_t nb = w.n_in / kQBlock;
    const float* wd = Form::scales(packed, w);
    [[maybe_unused]] const float* wm = wd + nb * kKGemmRows;
    const TokenRows<T> x = token_rows<T>(*tile.acts, t0, w.n_in, nb, nb);
    __m256 lanes[8][T][2];
    for (int l = 0; l < 8; ++l)
      for (int t = 0; t < T; ++t) lanes[l][t][0] = lanes[l][t][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const int8_t* xq[T];
      for (int t = 0; t < T; ++t) xq[t] = x.q[t] + b * kQBlock;
      __m256i dot[T][2];
      block_dot<T>(packed + b * Form::kQuantBytes, xq, dot);
      const float* d = wd + b * kKGemmRows;  // [16 rows]
      [[maybe_unused]] const float* m = wm + b * kKGemmRows;
      __m256(&lane)[T][2] = lanes[b % 8];
      for (int t = 0; t < T; ++t) {
        const __m256 x_d = _mm256_set1_ps(x.d[t][b]);
        for (int z = 0; z < 2; ++z) {
          __m256i dt = dot[t][z];
          if constexpr (Form::kOffset != 0)
            dt = _mm256_sub_epi32(
                dt, _mm256_slli_epi32(broadcast_i32(x.sums8[t] + b), Form::kShift));
          // block32_lane_update: fma(w_d * x_d, dot, lane), then fma(w_m * x_d, sum(x), lane).
          __m256 l = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(d + 8 * z), x_d),
                                     _mm256_cvtepi32_ps(dt), lane[t][z]);
          if constexpr (U::kHasMin)
            l = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(m + 8 * z), x_d),
                                _mm256_set1_ps(static_cast<float>(x.sums[t][b])), l);
          lane[t][z] = l;
        }
      }
    }
    store_lanes8_ymm<T>(lanes, tile, row0, n_rows, t0);
  }
};

}  // namespace
}  // namespace tally::cpu::detail::simd
