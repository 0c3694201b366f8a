// K-quant kernels (Q4_K, Q5_K, Q6_K) on 256-bit integer vectors, and helpers shared with
// matmul_interleaved_simd.h. Only matmul_avx2.cpp, matmul_avxvnni.cpp and matmul_avx512.cpp
// include this (it needs AVX2 + FMA + F16C at compile time). The integer dot of 32 u8 x s8
// bytes comes from a policy class `Isa`:
//   Isa::dot(u8, s8)                  -> int32x8 partial sums (maddubs+madd, or vpdpbusd)
//   Isa::dot_scaled(u8, s8, scale)    -> the same, each pair of elements times its int16 lane
//                                        of scale (lanes 0..7: elements 0..15, 8..15: 16..31)
//
// The results follow the canonical order of matmul_kernels.h: integer dots are exact, and
// super-block b enters float lane b % 8 through one fma, as in matmul_scalar.cpp.
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "backend/cpu/matmul_kernels.h"
#include "tensor/half.h"
#include "tensor/quant_blocks.h"

namespace tally::cpu::detail::simd {
// Internal linkage: this header is compiled into objects with different ISA flags (avx2,
// avx2-vnni, avx512), and a shared template instance would let the linker keep any one
// copy, AVX-512 instructions included, for all of them.
namespace {

[[gnu::always_inline]] static inline __m256i load_i8x32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// The two int32 sums of a's lanes and b's lanes (exact: integer adds in any order).
[[gnu::always_inline]] static inline void hsum2_i32(__m256i a, __m256i b, int32_t* sum_a,
                                                    int32_t* sum_b) {
  const __m256i h = _mm256_hadd_epi32(a, b);  // a0+a1 a2+a3 b0+b1 b2+b3 | a4+a5 a6+a7 b4+b5 b6+b7
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));  // a a b b
  *sum_a = _mm_cvtsi128_si32(s);
  *sum_b = _mm_extract_epi32(s, 2);
}

// A weight block's f16 scale with F16C: the bits of tensor/half.h's f16_to_f32 (NaNs come out
// quiet in both), without its branches.
[[gnu::always_inline]] static inline float f16c_to_f32(uint16_t h) { return _cvtsh_ss(h); }

[[gnu::always_inline]] static inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// The activation rows of up to kMaxTokens tokens that one kernel call serves: each weight
// block is loaded and unpacked once for all of them.
inline constexpr int kMaxTokens = 4;

template <int T>
struct TokenRows {
  const int8_t* q[T];       // [n_in] each
  const float* d[T];        // [n_in / block]
  const int16_t* sums[T];   // per block (32-blocks) or per 16 (K-quants)
  const int32_t* sums8[T];  // 32-blocks: 8 * sums
};

template <int T>
[[gnu::always_inline]] static inline TokenRows<T> token_rows(const MatmulActs& a, int64_t t0,
                                                             int64_t n, int64_t n_scales,
                                                             int64_t n_sums) {
  TokenRows<T> r;
  for (int t = 0; t < T; ++t) {
    r.q[t] = a.q + (t0 + t) * n;
    r.d[t] = a.d + (t0 + t) * n_scales;
    r.sums[t] = a.sums + (t0 + t) * n_sums;
    r.sums8[t] = a.sums8 ? a.sums8 + (t0 + t) * n_scales : nullptr;
  }
  return r;
}

[[gnu::always_inline]] static inline float reduce_acc(__m256 acc) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  return lanes8_reduce(lanes);
}

// Sixteen int16 lanes all equal to int16 lane j of `v` (v holds the same 8 values in both
// 128-bit halves): one in-lane byte shuffle.
[[gnu::always_inline]] static inline __m256i broadcast_i16(__m256i v, int j) {
  const __m256i ctrl = _mm256_set1_epi16(static_cast<int16_t>((2 * j) | ((2 * j + 1) << 8)));
  return _mm256_shuffle_epi8(v, ctrl);
}

// Int16 lane j of `v` in the low half and lane k in the high half, each 8 times.
[[gnu::always_inline]] static inline __m256i broadcast_i16_pair(__m256i v, int j, int k) {
  const __m256i ctrl =
      _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>((2 * k) | ((2 * k + 1) << 8))),
                       _mm_set1_epi16(static_cast<int16_t>((2 * j) | ((2 * j + 1) << 8))));
  return _mm256_shuffle_epi8(v, ctrl);
}

// Q4_K's 12 scale bytes as 16 bytes: scales 0..7 then mins 0..7 (quant_blocks.h's packing,
// four sub-blocks at a time in 32-bit words w0..w2; the masks drop bits shifted across
// bytes):  sc_lo = w0 & 3f,  m_lo = w1 & 3f,  sc_hi = (w2 & 0f) | (w0 >> 2 & 30),
// m_hi = (w2 >> 4 & 0f) | (w1 >> 2 & 30), all in vector lanes. The 16-byte load reads 4
// bytes past the scales, into the block's own quants.
[[gnu::always_inline]] static inline __m128i q4k_unpack_scales(const uint8_t* packed) {
  static_assert(offsetof(BlockQ4_K, scales) + 16 <= sizeof(BlockQ4_K));
  // Lanes of the result: sc_lo sc_hi m_lo m_hi.
  const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));  // w0 w1 w2 -
  const __m128i low = _mm_and_si128(_mm_shuffle_epi32(w, 0x10), _mm_set1_epi8(0x3f));  // lanes 0, 2
  const __m128i w2 = _mm_srlv_epi32(_mm_shuffle_epi32(w, 0x88), _mm_setr_epi32(0, 0, 0, 4));
  const __m128i w01 = _mm_srli_epi32(_mm_shuffle_epi32(w, 0x40), 2);  // lanes 1, 3: w0, w1
  const __m128i high = _mm_or_si128(_mm_and_si128(w2, _mm_set1_epi8(0x0f)),
                                    _mm_and_si128(w01, _mm_set1_epi8(0x30)));  // lanes 1, 3
  return _mm_blend_epi32(low, high, 0xa);
}

// Q4_K, and Q5_K (Block = BlockQ5_K: the same scales and nibbles plus bit 4 from qh).
template <class Isa, class Block = BlockQ4_K>
struct Q4KKernel {
  static constexpr bool kFiveBit = sizeof(Block) == sizeof(BlockQ5_K);
  template <int T>
  static void run(const uint8_t* row, const MatmulActs& a, int64_t t0, int64_t n, float* out) {
    const auto* blocks = reinterpret_cast<const Block*>(row);
    const int64_t nb = n / kQKBlock;
    const TokenRows<T> x = token_rows<T>(a, t0, n, nb, n / kActSumGroup);
    const __m256i m4 = _mm256_set1_epi8(15);
    // Bytes 8..15 (the mins), each twice: pairs with the two sums of 16 of a sub-block.
    const __m128i dup_mins =
        _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
    float lanes[T][8] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const Block& blk = blocks[b];
      const __m128i sc_m = q4k_unpack_scales(blk.scales);
      const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sc_m));  // [sc0..7] x2
      const __m256i mins = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(sc_m, dup_mins));
      __m256i acc[T];
      for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_si256();
      for (int g = 0; g < 4; ++g) {  // 32 bytes: low nibbles sub-block 2g, high 2g+1
        const __m256i q = load_i8x32(blk.qs + 32 * g);
        __m256i lo = _mm256_and_si256(q, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        if constexpr (kFiveBit) {  // bit 2g (2g+1) of qh[l] is bit 4 of lo's (hi's) byte l
          const __m256i qh = load_i8x32(blk.qh);
          const __m256i one = _mm256_set1_epi8(1);
          lo = _mm256_or_si256(
              lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one), 4));
          hi = _mm256_or_si256(
              hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one), 4));
        }
        const __m256i sc_lo = broadcast_i16(scales, 2 * g);
        const __m256i sc_hi = broadcast_i16(scales, 2 * g + 1);
        for (int t = 0; t < T; ++t) {
          const int8_t* xt = x.q[t] + b * kQKBlock + 64 * g;
          acc[t] = _mm256_add_epi32(acc[t], Isa::dot_scaled(lo, load_i8x32(xt), sc_lo));
          acc[t] = _mm256_add_epi32(acc[t], Isa::dot_scaled(hi, load_i8x32(xt + 32), sc_hi));
        }
      }
      const float w_d = f16c_to_f32(blk.d), w_dmin = f16c_to_f32(blk.dmin);
      for (int t = 0; t < T; ++t) {
        const __m256i sums = load_i8x32(x.sums[t] + b * (kQKBlock / kActSumGroup));  // 16 x i16
        int32_t dot = 0, min_dot = 0;
        hsum2_i32(acc[t], _mm256_madd_epi16(sums, mins), &dot, &min_dot);
        lanes[t][b % 8] = q4k_lane_update(lanes[t][b % 8], w_d, w_dmin, x.d[t][b], dot, min_dot);
      }
    }
    for (int t = 0; t < T; ++t) out[t] = lanes8_reduce(lanes[t]);
  }
};

// The four 32-byte quarters of one 128-value half of a q6_K block (ql: its 64 bytes, qh: its
// 32): ql's nibbles joined with qh's bit pairs, each byte the weight + 32. Byte-wise shifts go
// through 16-bit lanes; the masks drop what crosses byte borders.
[[gnu::always_inline]] inline void q6k_half_quants(const uint8_t* ql, const uint8_t* qh_bytes,
                                                   __m256i q[4]) {
  const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
  const __m256i qh = load_i8x32(qh_bytes);
  const __m256i ql0 = load_i8x32(ql);
  const __m256i ql1 = load_i8x32(ql + 32);
  q[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
  q[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
  q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m30));
  q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                         _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
}

template <class Isa>
struct Q6KKernel {
  template <int T>
  static void run(const uint8_t* row, const MatmulActs& a, int64_t t0, int64_t n, float* out) {
    const auto* blocks = reinterpret_cast<const BlockQ6_K*>(row);
    const int64_t nb = n / kQKBlock;
    const TokenRows<T> x = token_rows<T>(a, t0, n, nb, n / kActSumGroup);
    float lanes[T][8] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ6_K& blk = blocks[b];
      const __m256i scales =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)));
      __m256i acc[T];
      for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_si256();
      for (int h = 0; h < 2; ++h) {  // halves of 128: quarters from ql's nibbles, qh's bit pairs
        // Scales 8h..8h+7 in both 128-bit halves.
        const __m256i sc = h == 0 ? _mm256_permute2x128_si256(scales, scales, 0x00)
                                  : _mm256_permute2x128_si256(scales, scales, 0x11);
        __m256i q[4];
        q6k_half_quants(blk.ql + 64 * h, blk.qh + 32 * h, q);
        __m256i sck[4];
        for (int k = 0; k < 4; ++k) sck[k] = broadcast_i16_pair(sc, 2 * k, 2 * k + 1);
        for (int t = 0; t < T; ++t) {
          const int8_t* xt = x.q[t] + b * kQKBlock + 128 * h;
          for (int k = 0; k < 4; ++k)
            acc[t] =
                _mm256_add_epi32(acc[t], Isa::dot_scaled(q[k], load_i8x32(xt + 32 * k), sck[k]));
        }
      }
      const float w_d = f16c_to_f32(blk.d);
      for (int t = 0; t < T; ++t) {
        // The weights are q - 32: subtract 32 * sum_j scale_j * (sum of x over sub-block j).
        const __m256i sums = load_i8x32(x.sums[t] + b * (kQKBlock / kActSumGroup));  // 16 x i16
        // One horizontal sum of acc - 32 * offsets (exact: |values| < 2^24).
        const __m256i offsets = _mm256_madd_epi16(sums, scales);
        const int32_t dot = hsum_i32(_mm256_sub_epi32(acc[t], _mm256_slli_epi32(offsets, 5)));
        lanes[t][b % 8] = fma_f32(w_d * x.d[t][b], static_cast<float>(dot), lanes[t][b % 8]);
      }
    }
    for (int t = 0; t < T; ++t) out[t] = lanes8_reduce(lanes[t]);
  }
};

// Tokens in blocks of kTokenBlock (their int8 rows stay in L2), and within a block the
// tile's rows one by one against its tokens, up to kMaxTokens per kernel call. The tile's
// rows (16 of them: a few KB to tens of KB) stay in L2 across token blocks, so each weight
// row is read from memory once per call.
inline constexpr int64_t kTokenBlock = 16;

template <class Kernel>
void tile_rows(const MatmulTile& tile) {
  const WeightMatrix& w = *tile.w;
  const MatmulActs& a = *tile.acts;
  for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kTokenBlock) {
    const int64_t t_end = t0 + kTokenBlock < a.n_tokens ? t0 + kTokenBlock : a.n_tokens;
    for (int64_t o = tile.row_begin; o < tile.row_end; ++o) {
      const uint8_t* row = w.data + o * w.row_bytes;
      float out[kMaxTokens];
      int64_t t = t0;
      for (; t + kMaxTokens <= t_end; t += kMaxTokens) {
        Kernel::template run<kMaxTokens>(row, a, t, w.n_in, out);
        for (int i = 0; i < kMaxTokens; ++i) tile.y[(t + i) * w.n_out + o] = out[i];
      }
      const int64_t left = t_end - t;
      if (left == 3) Kernel::template run<3>(row, a, t, w.n_in, out);
      if (left == 2) Kernel::template run<2>(row, a, t, w.n_in, out);
      if (left == 1) Kernel::template run<1>(row, a, t, w.n_in, out);
      for (int64_t i = 0; i < left; ++i) tile.y[(t + i) * w.n_out + o] = out[i];
    }
  }
}

}  // namespace
}  // namespace tally::cpu::detail::simd
