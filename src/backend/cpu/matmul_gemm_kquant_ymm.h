// The many-token GEMM of the super-block types on 256-bit vectors: AVX2 (vpmaddubsw +
// vpmaddwd) and AVX2 + AVX-VNNI (vpdpbusd ymm); included by matmul_avx2.cpp and
// matmul_avxvnni.cpp, whose `Isa` policies give the integer dot (matmul_simd_quant.h).
//
// The 512-bit GEMM's form and group loop (matmul_gemm_kquant_pack.h): each group of 16 rows
// is unpacked once per call into per-thread scratch, and every token of the call runs over
// it. A 64-byte line of the unpacked form (16 rows) is two ymm here: rows 0-7 and 8-15.
//
// Register tile: 16 rows (two ymm) x T tokens. Per 4-byte chunk, the two ymm of quants are
// loaded once and each token's broadcast of 4 activation bytes feeds both.
//   AVX2 (Isa::kInt16Pairs): vpmaddubsw gives int16 pair sums; vpmaddwd multiplies them by
//     the row's sub-block scale (both int16 halves of its lane), so the scale costs no extra
//     instruction: 2 x T int32 accumulators per super-block, T = 4. The pairs must not
//     saturate: 2 * kMaxQuant * 127 <= 32767 (so not IQ4_XS, whose u8 form reaches 241).
//   AVX-VNNI: vpdpbusd sums into int32 per sub-block, then one vpmulld by the scales into the
//     super-block's dot (as the 512-bit GEMM does): T = 2, so 4 sums + 4 dots fit the 16 ymm.
// Then per 16 activations the m-terms (vpmaddwd with the quantizer's sums of 16).
//
// Same bits as the per-row kernels and the scalar ones (matmul_kernels.h): the integer dot
// and min-dot of a super-block are exact whatever the order; each (row, token) then takes
// the canonical float steps into lane b % 8, in block order, and the eight lanes are reduced
// as lanes8_reduce does (the 512-bit GEMM's steps, eight rows per vector).
#pragma once

#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_gemm_kquant_pack.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_quant.h"
#include "tensor/quant_blocks.h"

namespace tally::cpu::detail::simd {
// Internal linkage: compiled with different ISA flags (avx2, avx2-vnni).
namespace {

// An 8 x 8 transpose of 32-bit words: dst word i of row j (dst_stride apart) = src word j of
// row i (src_stride apart).
[[gnu::always_inline]] static inline void transpose8_epi32(const uint8_t* src, int64_t src_stride,
                                                           uint8_t* dst, int64_t dst_stride) {
  __m256i r[8], t[8];
  for (int i = 0; i < 8; ++i)
    r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * src_stride));
  for (int i = 0; i < 4; ++i) {  // per 128-bit lane: r2i[0] r2i+1[0] r2i[1] r2i+1[1]
    t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {  // r[4i + j]: rows 4i..4i+3, word j (low lane), j + 4 (high)
    r[4 * i] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j * dst_stride),
                        _mm256_permute2x128_si256(r[j], r[4 + j], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (j + 4) * dst_stride),
                        _mm256_permute2x128_si256(r[j], r[4 + j], 0x31));
  }
}

// pack_group's transpose: 16 rows of 64 bytes (src_stride apart) to 16 chunks of 64 bytes.
[[gnu::always_inline]] static inline void transpose16_epi32_ymm(const uint8_t* src,
                                                                int64_t src_stride, uint8_t* dst) {
  for (int rh = 0; rh < 2; ++rh)    // rows 8rh..8rh+7: bytes 32rh.. of each chunk
    for (int wh = 0; wh < 2; ++wh)  // words 8wh..8wh+7: chunks 8wh..8wh+7
      transpose8_epi32(src + 8 * rh * src_stride + 32 * wh, src_stride, dst + 64 * 8 * wh + 32 * rh,
                       64);
}

// 4 activation bytes in every 32-bit lane (vpbroadcastd from memory).
[[gnu::always_inline]] static inline __m256i broadcast_u32_ymm(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

// The eight lanes of 16 rows (two ymm: rows 0-7, 8-15) x T tokens reduced as lanes8_reduce
// does, row by row: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)); stored as y rows
// [row0, row0 + n_rows).
template <int T>
[[gnu::always_inline]] static inline void store_lanes8_ymm(const __m256 (&lanes)[8][T][2],
                                                           const MatmulTile& tile, int64_t row0,
                                                           int n_rows, int64_t t0) {
  for (int t = 0; t < T; ++t) {
    for (int z = 0; z < 2; ++z) {
      const int rows = std::min(8, n_rows - 8 * z);
      if (rows <= 0) break;
      const __m256 a0 = _mm256_add_ps(lanes[0][t][z], lanes[4][t][z]);
      const __m256 a1 = _mm256_add_ps(lanes[1][t][z], lanes[5][t][z]);
      const __m256 a2 = _mm256_add_ps(lanes[2][t][z], lanes[6][t][z]);
      const __m256 a3 = _mm256_add_ps(lanes[3][t][z], lanes[7][t][z]);
      const __m256 sum = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));
      float* y = tile.y + (t0 + t) * tile.w->n_out + row0 + 8 * z;
      if (rows == 8) {
        _mm256_storeu_ps(y, sum);
      } else {
        alignas(32) float out[8];
        _mm256_store_ps(out, sum);
        std::memcpy(y, out, sizeof(float) * static_cast<size_t>(rows));
      }
    }
  }
}

// The 4-byte chunks [c0, c0 + N) of a 16-row line against T tokens: each chunk's two ymm of
// quants (rows 0-7, 8-15) are loaded once, and step(t, w0, w1, xb) gets them with token t's
// broadcast of its 4 activation bytes xq[t] + 4c. The 32-block GEMM's loop; kgemm_tile_ymm
// below keeps its two written out: through this helper GCC allocated its registers otherwise
// and q4_K / q5_K ran 4% slower on plain AVX2 (146 / 140.5 against 152.5 / 146 GFLOP/s, one
// core, a 64 x 2048 panel against 64 tokens, alternated runs).
template <int T, int N, class Step>
[[gnu::always_inline]] static inline void chunks_ymm(const uint8_t* quants, const int8_t* const* xq,
                                                     int c0, Step&& step) {
  for (int cc = 0; cc < N; ++cc) {
    const int c = c0 + cc;
    const __m256i w0 = load_i8x32(quants + 64 * c);
    const __m256i w1 = load_i8x32(quants + 64 * c + 32);
    for (int t = 0; t < T; ++t) step(t, w0, w1, broadcast_u32_ymm(xq[t] + 4 * c));
  }
}

// One unpacked group against tokens [t0, t0 + T): y rows [row0, row0 + n_rows).
template <class G, class Isa, int T>
void kgemm_tile_ymm(const uint8_t* packed, const MatmulTile& tile, int64_t row0, int n_rows,
                    int64_t t0) {
  static_assert(!Isa::kInt16Pairs || 2 * G::kMaxQuant * 127 <= 32767,
                "vpmaddubsw pairs would saturate");
  using P = KPacked<G>;
  constexpr int kChunksPerSub = kQKBlock / 4 / G::kSubs;  // 4-byte chunks per sub-block
  const WeightMatrix& w = *tile.w;
  const int64_t n_in = w.n_in, nb = n_in / kQKBlock;
  const TokenRows<T> x = token_rows<T>(*tile.acts, t0, n_in, nb, n_in / kActSumGroup);
  // Each row's int16 scale in both halves of its 32-bit lane (vpmaddwd's pairs).
  const __m256i dup_low16 = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13,
                                             0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
  __m256 lanes[8][T][2];
  for (int l = 0; l < 8; ++l)
    for (int t = 0; t < T; ++t) lanes[l][t][0] = lanes[l][t][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p = packed + b * P::kBytes;
    const int8_t* xq[T];
    for (int t = 0; t < T; ++t) xq[t] = x.q[t] + b * kQKBlock;
    __m256i dot[T][2];
    for (int t = 0; t < T; ++t) dot[t][0] = dot[t][1] = _mm256_setzero_si256();
    for (int j = 0; j < G::kSubs; ++j) {
      __m256i sc[2];
      for (int z = 0; z < 2; ++z) sc[z] = load_i8x32(p + P::kScales + 64 * j + 32 * z);
      if constexpr (Isa::kInt16Pairs) {
        for (int z = 0; z < 2; ++z) sc[z] = _mm256_shuffle_epi8(sc[z], dup_low16);
        for (int cc = 0; cc < kChunksPerSub; ++cc) {
          const int c = j * kChunksPerSub + cc;
          const __m256i w0 = load_i8x32(p + P::kQuants + 64 * c);
          const __m256i w1 = load_i8x32(p + P::kQuants + 64 * c + 32);
          for (int t = 0; t < T; ++t) {
            const __m256i xb = broadcast_u32_ymm(xq[t] + 4 * c);
            dot[t][0] = _mm256_add_epi32(dot[t][0], Isa::dot_scaled(w0, xb, sc[0]));
            dot[t][1] = _mm256_add_epi32(dot[t][1], Isa::dot_scaled(w1, xb, sc[1]));
          }
        }
      } else {
        __m256i s[T][2];
        for (int t = 0; t < T; ++t) s[t][0] = s[t][1] = _mm256_setzero_si256();
        for (int cc = 0; cc < kChunksPerSub; ++cc) {
          const int c = j * kChunksPerSub + cc;
          const __m256i w0 = load_i8x32(p + P::kQuants + 64 * c);
          const __m256i w1 = load_i8x32(p + P::kQuants + 64 * c + 32);
          for (int t = 0; t < T; ++t) {
            const __m256i xb = broadcast_u32_ymm(xq[t] + 4 * c);
            s[t][0] = Isa::q8_step(s[t][0], w0, xb);
            s[t][1] = Isa::q8_step(s[t][1], w1, xb);
          }
        }
        for (int t = 0; t < T; ++t)
          for (int z = 0; z < 2; ++z)
            dot[t][z] = _mm256_add_epi32(dot[t][z], _mm256_mullo_epi32(s[t][z], sc[z]));
      }
    }
    for (int t = 0; t < T; ++t) {
      const int16_t* sums = x.sums[t] + b * (kQKBlock / kActSumGroup);
      const __m256 x_d = _mm256_set1_ps(x.d[t][b]);
      for (int z = 0; z < 2; ++z) {
        __m256i mdot = _mm256_setzero_si256();
        for (int k = 0; k < 8; ++k)  // the sums of 16 activations, two per 32-bit lane
          mdot = _mm256_add_epi32(
              mdot, _mm256_madd_epi16(load_i8x32(p + P::kMterms + 64 * k + 32 * z),
                                      broadcast_u32_ymm(sums + 2 * k)));
        const __m256 d = _mm256_loadu_ps(reinterpret_cast<const float*>(p + P::kD) + 8 * z);
        __m256& lane = lanes[b % 8][t][z];
        if constexpr (G::kHasMin) {
          // q4k_lane_update: fma(d * x_d, dot, lane), then fma(-(dmin * x_d), min_dot, lane).
          const __m256 dmin =
              _mm256_loadu_ps(reinterpret_cast<const float*>(p + P::kDmin) + 8 * z);
          const __m256 l =
              _mm256_fmadd_ps(_mm256_mul_ps(d, x_d), _mm256_cvtepi32_ps(dot[t][z]), lane);
          lane = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, x_d), _mm256_cvtepi32_ps(mdot), l);
        } else {
          lane = _mm256_fmadd_ps(_mm256_mul_ps(d, x_d),
                                 _mm256_cvtepi32_ps(_mm256_sub_epi32(dot[t][z], mdot)), lane);
        }
      }
    }
  }
  store_lanes8_ymm<T>(lanes, tile, row0, n_rows, t0);
}

// The GEMM's form for gemm_row_groups (matmul_gemm_kquant_pack.h).
template <class G, class Isa>
struct KGemmYmm {
  static constexpr int kTokens = Isa::kInt16Pairs ? 4 : 2;
  static int64_t group_bytes(const WeightMatrix& w) {
    return w.n_in / kQKBlock * KPacked<G>::kBytes;
  }
  static void pack(const WeightMatrix& w, int64_t row0, int n_rows, uint8_t* dst) {
    pack_group<G, transpose16_epi32_ymm>(w, row0, n_rows, dst);
  }
  template <int T>
  static void tile(const uint8_t* packed, const MatmulTile& tile, int64_t row0, int n_rows,
                   int64_t t0) {
    kgemm_tile_ymm<G, Isa, T>(packed, tile, row0, n_rows, t0);
  }
};

}  // namespace
}  // namespace tally::cpu::detail::simd
