// The many-token GEMM of the 32-block types with per-row kernels (Q4_1, Q5_0, Q5_1, IQ4_NL)
// on 512-bit vectors (AVX-512 VNNI): only matmul_avx512.cpp includes this.
//
// The same machinery as the super-block GEMM (matmul_gemm_kquant_pack.h's group loop, its
// 16 x 16 word transpose, its lane reduction); the per-type part is only the unpacking, which
// is the 256-bit kernels' Unpack policy, into the form of matmul_gemm_block32_pack.h (shared
// with the 256-bit GEMM): each group of 16 rows is unpacked once per call into per-thread
// scratch, the quants as u8 (IQ4_NL's grid + 128).
//
// Register tile: one zmm of 16 rows x T tokens (T <= 8): per 4-byte chunk one load of the 16
// rows' quants and one vpdpbusd per token against a broadcast of its 4 activation bytes.
//
// Same bits as the per-row kernels and the scalar ones (matmul_kernels.h): a block's integer
// dot is exact (the offset comes off as kOffset * sum(x) of the block, from the quantizer's
// sums8), then block b enters lane b % 8 of each (row, token) through block32_lane_update's
// steps: fma(w_d * x_d, dot, lane), and for Q4_1 / Q5_1 fma(w_m * x_d, sum(x), lane); the
// eight lanes are reduced as lanes8_reduce does. Lanes never given a block stay +0.
#pragma once

#include <immintrin.h>

#include "backend/cpu/matmul_gemm_block32_pack.h"
#include "backend/cpu/matmul_gemm_kquant_pack.h"
#include "backend/cpu/matmul_gemm_kquant_zmm.h"
#include "backend/cpu/matmul_gemm_zmm.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_block32.h"
#include "tensor/quant_blocks.h"

namespace tally::cpu::detail::simd {
// Internal linkage, as matmul_gemm_zmm.h (the emulated test instantiates these too).
namespace {

template <class U>
struct Block32GemmZmm : Block32Form<U, /*kSignedAsU8=*/true> {
  using Form = Block32Form<U, true>;
  static constexpr int kTokens = 8;

  static void pack(const WeightMatrix& w, int64_t row0, int n_rows, uint8_t* dst) {
    Form::template pack<transpose16_epi32>(w, row0, n_rows, dst);
  }

  template <int T>
  static void tile(const uint8_t* packed, const MatmulTile& tile, int64_t row0, int n_rows,
                   int64_t t0) {
    const WeightMatrix& w = *tile.w;
    const int64_t nb = w.n_in / kQBlock;
    const float* wd = Form::scales(packed, w);
    const float* wm = wd + nb * kKGemmRows;
    const TokenRows<T> x = token_rows<T>(*tile.acts, t0, w.n_in, nb, nb);
    __m512 lanes[8][T];
    for (int l = 0; l < 8; ++l)
      for (int t = 0; t < T; ++t) lanes[l][t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* q = packed + b * Form::kQuantBytes;
      __m512i s[T];
      for (int t = 0; t < T; ++t) s[t] = _mm512_setzero_si512();
      for (int c = 0; c < kQBlock / 4; ++c) {
        const __m512i wq = _mm512_loadu_si512(q + 64 * c);
        for (int t = 0; t < T; ++t)
          s[t] = keep_zmm(
              _mm512_dpbusd_epi32(s[t], wq, broadcast_u32_zmm(x.q[t] + b * kQBlock + 4 * c)));
      }
      const __m512 d = _mm512_loadu_ps(wd + b * kKGemmRows);
      __m512 m = _mm512_setzero_ps();
      if constexpr (U::kHasMin) m = _mm512_loadu_ps(wm + b * kKGemmRows);
      __m512* lane = lanes[b % 8];
      for (int t = 0; t < T; ++t) {
        const __m512 x_d = _mm512_set1_ps(x.d[t][b]);
        __m512i dot = s[t];
        if constexpr (Form::kOffset != 0)
          dot = _mm512_sub_epi32(
              dot, _mm512_slli_epi32(broadcast_u32_zmm(x.sums8[t] + b), Form::kShift));
        // block32_lane_update: fma(w_d * x_d, dot, lane), then fma(w_m * x_d, sum(x), lane).
        __m512 l = _mm512_fmadd_ps(_mm512_mul_ps(d, x_d), cvt_i32_ps(dot), lane[t]);
        if constexpr (U::kHasMin)
          l = _mm512_fmadd_ps(_mm512_mul_ps(m, x_d),
                              _mm512_set1_ps(static_cast<float>(x.sums[t][b])), l);
        lane[t] = l;
      }
    }
    store_lanes8_zmm<T>(lanes, tile, row0, n_rows, t0);
  }
};

}  // namespace
}  // namespace tally::cpu::detail::simd
