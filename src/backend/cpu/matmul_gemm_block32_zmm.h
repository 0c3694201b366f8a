// The many-token GEMM of the 32-block types with per-row kernels (Q4_1, Q5_0, Q5_1, IQ4_NL)
// on 512-bit vectors (AVX-512 VNNI): only matmul_avx512.cpp includes this.
//
// The same machinery as the super-block GEMM (matmul_gemm_kquant_pack.h's group loop, its
// 16 x 16 word transpose, its lane reduction); the per-type part is only the unpacking, which
// is the 256-bit kernels' Unpack policy (matmul_simd_block32.h, matmul_simd_iq4.h). Each
// group of 16 rows is unpacked once per call into per-thread scratch:
//   quants [nb2 blocks][8 chunks][16 rows][4] u8   chunk c of block b = its elements
//                                                  4c..4c+3 of each row, u = q + kOffset
//                                                  (nb2: the blocks rounded up to even)
//   d      [nb][16 rows] f32
//   m      [nb][16 rows] f32                       Q4_1 / Q5_1 only
// u is the Unpack's quants as they are (Q4_1, Q5_1: 0..15 / 0..31, no offset; Q5_0: q, whose
// weight is q - 16) or IQ4_NL's signed grid value + 128 (an xor), so a u8 operand always.
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

#include <cstring>

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
struct Block32GemmZmm {
  using Block = typename U::Block;
  // The u8 form's offset: signed weights (IQ4_NL's grid) go in + 128.
  static constexpr int kOffset = U::kSigned ? 128 : U::kOffset;
  // kOffset * sum(x) = sums8 << kShift (sums8 = 8 * sum(x)).
  static constexpr int kShift = kOffset == 128 ? 4 : kOffset == 16 ? 1 : 0;
  static_assert(kOffset == 0 || kOffset == 8 << kShift, "offset must be 8 << shift");
  static constexpr int kTokens = 8;
  static constexpr int64_t kQuantBytes = kQBlock * kKGemmRows;  // one block of 16 rows: 512

  static int64_t n_blocks2(const WeightMatrix& w) { return (w.n_in / kQBlock + 1) & ~int64_t{1}; }
  static int64_t group_bytes(const WeightMatrix& w) {
    const int64_t nb = w.n_in / kQBlock;
    return n_blocks2(w) * kQuantBytes + nb * kKGemmRows * 4 * (U::kHasMin ? 2 : 1);
  }

  // Two blocks at a time: 16 rows x 64 bytes, transposed into 16 chunks of 64 bytes.
  static void pack(const WeightMatrix& w, int64_t row0, int n_rows, uint8_t* dst) {
    const int64_t nb = w.n_in / kQBlock;
    if (n_rows < kKGemmRows) std::memset(dst, 0, static_cast<size_t>(group_bytes(w)));
    float* d = reinterpret_cast<float*>(dst + n_blocks2(w) * kQuantBytes);
    float* m = d + nb * kKGemmRows;
    alignas(64) uint8_t u[kKGemmRows][2 * kQBlock];
    std::memset(u, 0, sizeof u);
    for (int64_t b = 0; b < nb; b += 2) {
      for (int r = 0; r < n_rows; ++r) {
        const Block* blocks = reinterpret_cast<const Block*>(w.data + (row0 + r) * w.row_bytes);
        for (int64_t i = b; i < b + 2 && i < nb; ++i) {
          __m256i q = U::quants(blocks[i]);
          if constexpr (U::kSigned)
            q = _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(&u[r][kQBlock * (i - b)]), q);
          d[i * kKGemmRows + r] = f16c_to_f32(blocks[i].d);
          if constexpr (U::kHasMin) m[i * kKGemmRows + r] = f16c_to_f32(blocks[i].m);
        }
      }
      transpose16_epi32(&u[0][0], 2 * kQBlock, dst + b * kQuantBytes);
    }
  }

  template <int T>
  static void tile(const uint8_t* packed, const MatmulTile& tile, int64_t row0, int n_rows,
                   int64_t t0) {
    const WeightMatrix& w = *tile.w;
    const int64_t nb = w.n_in / kQBlock;
    const float* wd = reinterpret_cast<const float*>(packed + n_blocks2(w) * kQuantBytes);
    const float* wm = wd + nb * kKGemmRows;
    const TokenRows<T> x = token_rows<T>(*tile.acts, t0, w.n_in, nb, nb);
    __m512 lanes[8][T];
    for (int l = 0; l < 8; ++l)
      for (int t = 0; t < T; ++t) lanes[l][t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* q = packed + b * kQuantBytes;
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
        if constexpr (kOffset != 0)
          dot = _mm512_sub_epi32(dot, _mm512_slli_epi32(broadcast_u32_zmm(x.sums8[t] + b), kShift));
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

// From kKGemmMinTokens tokens on the GEMM; fewer take `narrow`, the per-row kernels: the same
// bits.
template <class U, MatmulTileFn narrow>
void tile_b32gemm_zmm(const MatmulTile& tile) {
  if (tile.acts->n_tokens < kKGemmMinTokens) return narrow(tile);
  gemm_row_groups<Block32GemmZmm<U>>(tile);
}

}  // namespace
}  // namespace tally::cpu::detail::simd
