// The many-token GEMM of the super-block types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS) on
// 512-bit vectors (AVX-512 VNNI): only matmul_avx512.cpp includes this.
//
// Packing (per task, from GGUF's rows): each group of 16 rows is unpacked once per call into
// the one form shared by all six types (matmul_gemm_kquant_pack.h): per super-block the
// quants as u8 in 4-byte chunks of 16 rows, the sub-block scales, the m-terms, d and dmin.
// The unpacked group stays in L1/L2 while every token of the call runs over it, so the
// unpacking (about a few tokens' worth of products) is paid once per call, not per token.
//
// Register tile: one zmm of 16 rows x T tokens (T <= 8). A broadcast of 4 activation bytes
// feeds one vpdpbusd per token; each sub-block's int32 sums are scaled (vpmulld) into the
// super-block's integer dot, and the per-16 activation sums go through vpdpwssd with mterms.
//
// Same bits as the per-row kernels and the scalar ones (matmul_kernels.h): the integer dot
// and min-dot of a super-block are exact whatever the order; then each (row, token) takes the
// canonical float steps into lane b % 8 (one fma, or q4k_lane_update's two), in block order,
// and the eight lanes are reduced as lanes8_reduce does. Lanes never given a block stay +0.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/matmul_gemm_kquant_pack.h"
#include "backend/cpu/matmul_gemm_zmm.h"
#include "backend/cpu/matmul_kernels.h"
#include "tensor/quant_blocks.h"

namespace tally::cpu::detail::simd {
// Internal linkage, as matmul_gemm_zmm.h (the emulated test instantiates these too).
namespace {

inline constexpr int kKGemmTokens = 8;  // tokens per register tile

// A 16 x 16 transpose of 32-bit words: src rows r (64 bytes each, src_stride apart) become
// dst rows (64 bytes each, contiguous): dst word r of row c = src word c of row r.
[[gnu::always_inline]] static inline void transpose16_epi32(const uint8_t* src, int64_t src_stride,
                                                            uint8_t* dst) {
  __m512i r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(src + i * src_stride);
  for (int i = 0; i < 8; ++i) {  // per 128-bit lane: a0 b0 a1 b1 | a2 b2 a3 b3
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // r[4i + j], lane L: rows 4i..4i+3, word 4L + j
    r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {  // the 4 x 4 transpose of 128-bit lanes of r[j], r[4+j], ...
    const __m512i v0 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x44);
    const __m512i v1 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xee);
    const __m512i w0 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x44);
    const __m512i w1 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xee);
    _mm512_storeu_si512(dst + 64 * j, _mm512_shuffle_i32x4(v0, w0, 0x88));
    _mm512_storeu_si512(dst + 64 * (4 + j), _mm512_shuffle_i32x4(v0, w0, 0xdd));
    _mm512_storeu_si512(dst + 64 * (8 + j), _mm512_shuffle_i32x4(v1, w1, 0x88));
    _mm512_storeu_si512(dst + 64 * (12 + j), _mm512_shuffle_i32x4(v1, w1, 0xdd));
  }
}

// The eight lanes of 16 rows x T tokens reduced as lanes8_reduce does, row by row:
// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)); stored as y rows [row0, row0 + n_rows).
template <int T>
[[gnu::always_inline]] static inline void store_lanes8_zmm(const __m512 (&lanes)[8][T],
                                                           const MatmulTile& tile, int64_t row0,
                                                           int n_rows, int64_t t0) {
  for (int t = 0; t < T; ++t) {
    const __m512 a0 = _mm512_add_ps(lanes[0][t], lanes[4][t]);
    const __m512 a1 = _mm512_add_ps(lanes[1][t], lanes[5][t]);
    const __m512 a2 = _mm512_add_ps(lanes[2][t], lanes[6][t]);
    const __m512 a3 = _mm512_add_ps(lanes[3][t], lanes[7][t]);
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(a0, a2), _mm512_add_ps(a1, a3));
    float* y = tile.y + (t0 + t) * tile.w->n_out + row0;
    if (n_rows == kKGemmRows) {
      _mm512_storeu_ps(y, sum);
    } else {
      alignas(64) float out[kKGemmRows];
      _mm512_store_ps(out, sum);
      std::memcpy(y, out, sizeof(float) * static_cast<size_t>(n_rows));
    }
  }
}

// One packed group against tokens [t0, t0 + T): y rows [row0, row0 + n_rows).
template <class G, int T>
void kgemm_tile(const uint8_t* packed, const MatmulTile& tile, int64_t row0, int n_rows,
                int64_t t0) {
  using P = KPacked<G>;
  constexpr int kChunksPerSub = kQKBlock / 4 / G::kSubs;  // 4-byte chunks per sub-block
  const WeightMatrix& w = *tile.w;
  const MatmulActs& a = *tile.acts;
  const int64_t n_in = w.n_in, nb = n_in / kQKBlock;
  const int8_t* xq[T];
  const float* xd[T];
  const int16_t* xs[T];
  for (int t = 0; t < T; ++t) {
    xq[t] = a.q + (t0 + t) * n_in;
    xd[t] = a.d + (t0 + t) * nb;
    xs[t] = a.sums + (t0 + t) * (n_in / kActSumGroup);
  }
  __m512 lanes[8][T];
  for (int l = 0; l < 8; ++l)
    for (int t = 0; t < T; ++t) lanes[l][t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p = packed + b * P::kBytes;
    __m512i dot[T];
    for (int t = 0; t < T; ++t) dot[t] = _mm512_setzero_si512();
    for (int j = 0; j < G::kSubs; ++j) {
      __m512i s[T];
      for (int t = 0; t < T; ++t) s[t] = _mm512_setzero_si512();
      for (int cc = 0; cc < kChunksPerSub; ++cc) {
        const int c = j * kChunksPerSub + cc;
        const __m512i wq = _mm512_loadu_si512(p + P::kQuants + 64 * c);
        for (int t = 0; t < T; ++t)
          s[t] = keep_zmm(
              _mm512_dpbusd_epi32(s[t], wq, broadcast_u32_zmm(xq[t] + b * kQKBlock + 4 * c)));
      }
      const __m512i sc = _mm512_loadu_si512(p + P::kScales + 64 * j);
      for (int t = 0; t < T; ++t) dot[t] = _mm512_add_epi32(dot[t], _mm512_mullo_epi32(s[t], sc));
    }
    __m512i mdot[T];
    for (int t = 0; t < T; ++t) mdot[t] = _mm512_setzero_si512();
    for (int k = 0; k < 8; ++k) {  // the sums of 16 activations, two per 32-bit lane
      const __m512i mt = _mm512_loadu_si512(p + P::kMterms + 64 * k);
      for (int t = 0; t < T; ++t) {
        const int16_t* sums = xs[t] + b * (kQKBlock / kActSumGroup) + 2 * k;
        mdot[t] = _mm512_dpwssd_epi32(mdot[t], mt, broadcast_u32_zmm(sums));
      }
    }
    const __m512 d = _mm512_loadu_ps(reinterpret_cast<const float*>(p + P::kD));
    __m512* lane = lanes[b % 8];
    if constexpr (G::kHasMin) {
      const __m512 dmin = _mm512_loadu_ps(reinterpret_cast<const float*>(p + P::kDmin));
      for (int t = 0; t < T; ++t) {
        const __m512 x_d = _mm512_set1_ps(xd[t][b]);
        // q4k_lane_update: fma(d * x_d, dot, lane), then fma(-(dmin * x_d), min_dot, lane).
        __m512 l = _mm512_fmadd_ps(_mm512_mul_ps(d, x_d), cvt_i32_ps(dot[t]), lane[t]);
        lane[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, x_d), cvt_i32_ps(mdot[t]), l);
      }
    } else {
      for (int t = 0; t < T; ++t) {
        const __m512 x_d = _mm512_set1_ps(xd[t][b]);
        lane[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, x_d),
                                  cvt_i32_ps(_mm512_sub_epi32(dot[t], mdot[t])), lane[t]);
      }
    }
  }
  store_lanes8_zmm<T>(lanes, tile, row0, n_rows, t0);
}

// The GEMM's form for gemm_row_groups (matmul_gemm_kquant_pack.h).
template <class G>
struct KGemmZmm {
  static constexpr int kTokens = kKGemmTokens;
  static int64_t group_bytes(const WeightMatrix& w) {
    return w.n_in / kQKBlock * KPacked<G>::kBytes;
  }
  static void pack(const WeightMatrix& w, int64_t row0, int n_rows, uint8_t* dst) {
    pack_group<G, transpose16_epi32>(w, row0, n_rows, dst);
  }
  template <int T>
  static void tile(const uint8_t* packed, const MatmulTile& tile, int64_t row0, int n_rows,
                   int64_t t0) {
    kgemm_tile<G, T>(packed, tile, row0, n_rows, t0);
  }
};

}  // namespace
}  // namespace tally::cpu::detail::simd
