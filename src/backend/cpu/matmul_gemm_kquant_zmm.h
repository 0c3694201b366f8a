// The many-token GEMM of the super-block types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS) on
// 512-bit vectors (AVX-512 VNNI): only matmul_avx512.cpp includes this.
//
// Packing (per task, from GGUF's rows): each group of 16 rows is unpacked once per call into
// one form shared by all six types, super-block by super-block:
//   quants  [64 chunks][16 rows][4] u8   chunk c = elements 4c..4c+3 of each row, as
//                                        u = weight integer + kOffset (so u8 >= 0)
//   scales  [kSubs][16 rows] int32       the integer scale of each sub-block
//   mterms  [8 pairs][16 rows][2] int16  per 16 elements: the min (Q4_K, Q5_K, Q2_K) or
//                                        kOffset * scale (the others)
//   d, dmin [16 rows] f32
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

#include "backend/cpu/matmul_gemm_zmm.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_iq4.h"
#include "backend/cpu/matmul_simd_k16.h"
#include "backend/cpu/matmul_simd_quant.h"
#include "tensor/quant_blocks.h"

namespace tally::cpu::detail::simd {
// Internal linkage, as matmul_gemm_zmm.h (the emulated test instantiates these too).
namespace {

// The fewest tokens for which a call takes the GEMM (fewer: the per-row kernels). Either
// path gives the same bits; this is only about speed (docs/performance.md).
inline constexpr int64_t kKGemmMinTokens = 8;
inline constexpr int kKGemmRows = 16;    // rows per packed group: one zmm
inline constexpr int kKGemmTokens = 8;   // tokens per register tile

// Q4_K / Q5_K's 8 scales, and their mins once per 16 elements.
[[gnu::always_inline]] static inline void q45k_scales(const uint8_t* packed, int32_t* sc,
                                                      int16_t* mt) {
  for (int j = 0; j < 8; ++j) {
    int s = 0, m = 0;
    q4k_scale_min(packed, j, &s, &m);
    sc[j] = s;
    mt[2 * j] = mt[2 * j + 1] = static_cast<int16_t>(m);
  }
}

// Per type (Q4KGemm ... IQ4XSGemm): quants() writes a super-block's quants as u8 in element
// order, scales() its integer scales and m-terms, d() / dmin() its f32 factors.
//   kSubs: sub-blocks per super-block (8 of 32 elements or 16 of 16)
//   kHasMin: the min-dot is a second float step (q4k_lane_update) rather than an offset
struct Q4KGemm {
  using Block = BlockQ4_K;
  static constexpr int kSubs = 8;
  static constexpr bool kHasMin = true;
  [[gnu::always_inline]] static inline void quants(const Block& b, uint8_t* u) {
    const __m256i m4 = _mm256_set1_epi8(15);
    for (int g = 0; g < 4; ++g) {  // low nibbles: sub-block 2g, high: 2g+1
      const __m256i q = load_i8x32(b.qs + 32 * g);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 64 * g), _mm256_and_si256(q, m4));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 64 * g + 32),
                          _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
    }
  }
  [[gnu::always_inline]] static inline void scales(const Block& b, int32_t* sc, int16_t* mt) {
    q45k_scales(b.scales, sc, mt);
  }
  static float d(const Block& b) { return f16c_to_f32(b.d); }
  static float dmin(const Block& b) { return f16c_to_f32(b.dmin); }
};

struct Q5KGemm {
  using Block = BlockQ5_K;
  static constexpr int kSubs = 8;
  static constexpr bool kHasMin = true;
  [[gnu::always_inline]] static inline void quants(const Block& b, uint8_t* u) {
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    const __m256i qh = load_i8x32(b.qh);
    for (int g = 0; g < 4; ++g) {  // bit 2g (2g+1) of qh[l] is bit 4 of lo's (hi's) byte l
      const __m256i q = load_i8x32(b.qs + 32 * g);
      const __m256i lo = _mm256_or_si256(
          _mm256_and_si256(q, m4),
          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one), 4));
      const __m256i hi = _mm256_or_si256(
          _mm256_and_si256(_mm256_srli_epi16(q, 4), m4),
          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one), 4));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 64 * g), lo);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 64 * g + 32), hi);
    }
  }
  [[gnu::always_inline]] static inline void scales(const Block& b, int32_t* sc, int16_t* mt) {
    q45k_scales(b.scales, sc, mt);
  }
  static float d(const Block& b) { return f16c_to_f32(b.d); }
  static float dmin(const Block& b) { return f16c_to_f32(b.dmin); }
};

struct Q6KGemm {
  using Block = BlockQ6_K;
  static constexpr int kSubs = 16;
  static constexpr bool kHasMin = false;
  static constexpr int kOffset = 32;  // q is the weight + 32
  [[gnu::always_inline]] static inline void quants(const Block& b, uint8_t* u) {
    for (int h = 0; h < 2; ++h) {
      __m256i q[4];
      q6k_half_quants(b.ql + 64 * h, b.qh + 32 * h, q);
      for (int k = 0; k < 4; ++k)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 128 * h + 32 * k), q[k]);
    }
  }
  [[gnu::always_inline]] static inline void scales(const Block& b, int32_t* sc, int16_t* mt) {
    for (int j = 0; j < 16; ++j) {
      sc[j] = q6k_signed_scale(b, j);
      mt[j] = static_cast<int16_t>(kOffset * sc[j]);
    }
  }
  static float d(const Block& b) { return f16c_to_f32(b.d); }
  static float dmin(const Block&) { return 0.0f; }
};

// Q3_K and Q2_K: quarter k of half h from K16's unpackers (matmul_simd_k16.h).
template <class U>
struct K16Gemm {
  using Block = typename U::Block;
  static constexpr int kSubs = 16;
  static constexpr bool kHasMin = U::kHasMin;
  [[gnu::always_inline]] static inline void quants(const Block& b, uint8_t* u) {
    const __m256i hm = U::high_bits(b);
    for (int h = 0; h < 2; ++h) {
      const __m256i qs_h = load_i8x32(b.qs + 32 * h);
      for (int k = 0; k < 4; ++k)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 128 * h + 32 * k),
                            U::quants(qs_h, hm, h, k));
    }
  }
  [[gnu::always_inline]] static inline void scales(const Block& b, int32_t* sc, int16_t* mt) {
    alignas(32) int16_t s[16], m[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(s), U::scales(b));
    _mm256_store_si256(reinterpret_cast<__m256i*>(m), U::mins(b));
    for (int j = 0; j < 16; ++j) {
      sc[j] = s[j];
      mt[j] = kHasMin ? m[j] : static_cast<int16_t>(U::kOffset * s[j]);
    }
  }
  static float d(const Block& b) { return U::d(b); }
  static float dmin(const Block& b) { return U::dmin(b); }
};

struct IQ4XSGemm {
  using Block = BlockIQ4_XS;
  static constexpr int kSubs = 8;
  static constexpr bool kHasMin = false;
  static constexpr int kOffset = 128;  // the grid value (-127..113) + 128
  [[gnu::always_inline]] static inline void quants(const Block& b, uint8_t* u) {
    for (int j = 0; j < 8; ++j) {
      const __m256i q = iq4_grid(block32_nibbles(b.qs + 16 * j));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 32 * j),
                          _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80))));
    }
  }
  [[gnu::always_inline]] static inline void scales(const Block& b, int32_t* sc, int16_t* mt) {
    for (int j = 0; j < 8; ++j) {
      sc[j] = iq4xs_scale(b, j) - 32;
      mt[2 * j] = mt[2 * j + 1] = static_cast<int16_t>(kOffset * sc[j]);
    }
  }
  static float d(const Block& b) { return f16c_to_f32(b.d); }
  static float dmin(const Block&) { return 0.0f; }
};

// Byte offsets inside one packed super-block of a group.
template <class G>
struct KPacked {
  static constexpr int64_t kQuants = 0;
  static constexpr int64_t kScales = kQKBlock * kKGemmRows;                  // 4096
  static constexpr int64_t kMterms = kScales + G::kSubs * kKGemmRows * 4;
  static constexpr int64_t kD = kMterms + 8 * kKGemmRows * 4;
  static constexpr int64_t kDmin = kD + kKGemmRows * 4;
  static constexpr int64_t kBytes = kDmin + kKGemmRows * 4;
};

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

// Unpacks rows [row0, row0 + n_rows) (n_rows <= 16; the rest of the group is zeros) into
// dst: nb super-blocks of KPacked<G>::kBytes. Each row's super-block is unpacked to bytes in
// element order, then 16 rows' bytes are transposed by 4-byte words into chunks.
template <class G>
void pack_group(const WeightMatrix& w, int64_t row0, int n_rows, uint8_t* dst) {
  using P = KPacked<G>;
  using Block = typename G::Block;
  const int64_t nb = w.n_in / kQKBlock;
  if (n_rows < kKGemmRows) std::memset(dst, 0, static_cast<size_t>(nb * P::kBytes));
  alignas(64) uint8_t u[kKGemmRows][kQKBlock];
  if (n_rows < kKGemmRows) std::memset(u, 0, sizeof u);
  int32_t sc[16];
  int16_t mt[16];
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* p = dst + b * P::kBytes;
    for (int r = 0; r < n_rows; ++r) {
      const Block& blk = reinterpret_cast<const Block*>(w.data + (row0 + r) * w.row_bytes)[b];
      G::quants(blk, u[r]);
      G::scales(blk, sc, mt);
      for (int j = 0; j < G::kSubs; ++j) std::memcpy(p + P::kScales + j * 64 + 4 * r, &sc[j], 4);
      for (int k = 0; k < 8; ++k) std::memcpy(p + P::kMterms + k * 64 + 4 * r, &mt[2 * k], 4);
      const float d = G::d(blk), dmin = G::dmin(blk);
      std::memcpy(p + P::kD + 4 * r, &d, 4);
      std::memcpy(p + P::kDmin + 4 * r, &dmin, 4);
    }
    for (int k = 0; k < kQKBlock / 64; ++k)
      transpose16_epi32(&u[0][64 * k], kQKBlock, p + P::kQuants + 16 * 64 * k);
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
  for (int t = 0; t < T; ++t) {
    // lanes8_reduce, row by row: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
    const __m512 a0 = _mm512_add_ps(lanes[0][t], lanes[4][t]);
    const __m512 a1 = _mm512_add_ps(lanes[1][t], lanes[5][t]);
    const __m512 a2 = _mm512_add_ps(lanes[2][t], lanes[6][t]);
    const __m512 a3 = _mm512_add_ps(lanes[3][t], lanes[7][t]);
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(a0, a2), _mm512_add_ps(a1, a3));
    float* y = tile.y + (t0 + t) * w.n_out + row0;
    if (n_rows == kKGemmRows) {
      _mm512_storeu_ps(y, sum);
    } else {
      alignas(64) float out[kKGemmRows];
      _mm512_store_ps(out, sum);
      std::memcpy(y, out, sizeof(float) * static_cast<size_t>(n_rows));
    }
  }
}

// Tokens [t, t_end) against one packed group: 8 at a time, then 4, 2, 1.
template <class G>
void kgemm_tokens(const uint8_t* packed, const MatmulTile& tile, int64_t row0, int n_rows,
                  int64_t t, int64_t t_end) {
  for (; t + kKGemmTokens <= t_end; t += kKGemmTokens)
    kgemm_tile<G, kKGemmTokens>(packed, tile, row0, n_rows, t);
  if (t + 4 <= t_end) kgemm_tile<G, 4>(packed, tile, row0, n_rows, t), t += 4;
  if (t + 2 <= t_end) kgemm_tile<G, 2>(packed, tile, row0, n_rows, t), t += 2;
  if (t < t_end) kgemm_tile<G, 1>(packed, tile, row0, n_rows, t);
}

// The tile's rows in groups of 16, each unpacked once (into scratch of the calling thread
// that only grows) and then run against every token. Fewer than kKGemmMinTokens tokens take
// `narrow`, the per-row kernels: the same bits.
template <class G, MatmulTileFn narrow>
void tile_kgemm_zmm(const MatmulTile& tile) {
  if (tile.acts->n_tokens < kKGemmMinTokens) return narrow(tile);
  const WeightMatrix& w = *tile.w;
  const int64_t group_bytes = w.n_in / kQKBlock * KPacked<G>::kBytes;
  thread_local std::vector<uint8_t> scratch;
  if (static_cast<int64_t>(scratch.size()) < group_bytes)
    scratch.resize(static_cast<size_t>(group_bytes));
  for (int64_t row0 = tile.row_begin; row0 < tile.row_end; row0 += kKGemmRows) {
    const int n_rows = static_cast<int>(std::min<int64_t>(kKGemmRows, tile.row_end - row0));
    pack_group<G>(w, row0, n_rows, scratch.data());
    kgemm_tokens<G>(scratch.data(), tile, row0, n_rows, 0, tile.acts->n_tokens);
  }
}

}  // namespace
}  // namespace tally::cpu::detail::simd
