// Per-row kernels for the 32-block types other than Q8_0 / Q4_0 (Q4_1, Q5_0, Q5_1, and
// IQ4_NL through matmul_simd_iq4.h) on 256-bit integer vectors; included only by
// matmul_avx2.cpp and matmul_avx512.cpp, whose `Isa` policies supply the u8 x s8 dot
// (matmul_simd_quant.h). Every function here is a template on that policy or always_inline:
// the two files compile them with different ISA flags, so no out-of-line copy may be shared.
//
// Canonical order (matmul_kernels.h): block b enters float lane b % 8. Eight blocks at a time
// give eight exact int32 dots, which a tree of horizontal adds gathers into one vector whose
// lane j is block b + j's dot: then the block's float update is one vector fma per term,
// the same arithmetic as the scalar code lane by lane. The last n_blocks % 8 blocks take the
// scalar update.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_quant.h"
#include "tensor/quant_blocks.h"

namespace tally::cpu::detail::simd {
// Internal linkage: this header is compiled into objects with different ISA flags (avx2,
// avx2-vnni, avx512), and a shared template instance would let the linker keep any one
// copy, AVX-512 instructions included, for all of them.
namespace {

// The 32 nibbles of a 32-block in element order (low nibbles are elements 0..15).
[[gnu::always_inline]] static inline __m256i block32_nibbles(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m4 = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
}

// Bit i of qh (32 bits) as 16 in byte i, else 0.
[[gnu::always_inline]] static inline __m256i block32_high_bits(const uint8_t* qh) {
  uint32_t bits = 0;
  std::memcpy(&bits, qh, 4);
  // Byte i takes qh's byte i / 8 (both 128-bit lanes hold the 4 bytes), then tests bit i % 8.
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)),
                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(16));
}

// An Unpack gives a block's 32 weights before scaling (`quants`, in element order), whether
// they are signed int8 (kSigned; else unsigned bytes), whether the block has a min (m), the
// offset its weights subtract (weights q - kOffset) and the largest |quant| (kMaxQuant: how
// many vpmaddubsw steps an int16 sum can take, matmul_gemm_block32_ymm.h).
struct Q4_1Unpack {
  using Block = BlockQ4_1;
  static constexpr bool kHasMin = true, kSigned = false;
  static constexpr int kOffset = 0, kMaxQuant = 15;
  [[gnu::always_inline]] static inline __m256i quants(const Block& b) {
    return block32_nibbles(b.qs);
  }
};
struct Q5_0Unpack {
  using Block = BlockQ5_0;
  static constexpr bool kHasMin = false, kSigned = false;
  static constexpr int kOffset = 16, kMaxQuant = 31;
  [[gnu::always_inline]] static inline __m256i quants(const Block& b) {
    return _mm256_or_si256(block32_nibbles(b.qs), block32_high_bits(b.qh));
  }
};
struct Q5_1Unpack {
  using Block = BlockQ5_1;
  static constexpr bool kHasMin = true, kSigned = false;
  static constexpr int kOffset = 0, kMaxQuant = 31;
  [[gnu::always_inline]] static inline __m256i quants(const Block& b) {
    return _mm256_or_si256(block32_nibbles(b.qs), block32_high_bits(b.qh));
  }
};

// Eight int32x8 partial sums -> one vector whose lane j is the total of v[j] (exact).
[[gnu::always_inline]] static inline __m256i hsum8_i32(const __m256i* v) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]);
  const __m256i h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]);
  const __m256i h67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i h0123 = _mm256_hadd_epi32(h01, h23);  // lanes 0..3: v0..v3 low halves, 4..7 high
  const __m256i h4567 = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20),
                          _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

// The exact dot of 32 weights with 32 int8 activations. Signed weights go through the u8 x s8
// instructions as |w| times x with w's sign (|w|, |x| <= 127: no saturation).
template <class Isa, class Unpack>
[[gnu::always_inline]] static inline __m256i block32_dot(__m256i q, __m256i x) {
  if constexpr (Unpack::kSigned) return Isa::dot(_mm256_abs_epi8(q), _mm256_sign_epi8(x, q));
  return Isa::dot(q, x);
}

// Field F (an f16) of 8 consecutive blocks as 8 int16 lanes.
template <auto F, class Block>
[[gnu::always_inline]] static inline __m128i block32_f16x8(const Block* blocks) {
  return _mm_setr_epi16(static_cast<int16_t>(blocks[0].*F), static_cast<int16_t>(blocks[1].*F),
                        static_cast<int16_t>(blocks[2].*F), static_cast<int16_t>(blocks[3].*F),
                        static_cast<int16_t>(blocks[4].*F), static_cast<int16_t>(blocks[5].*F),
                        static_cast<int16_t>(blocks[6].*F), static_cast<int16_t>(blocks[7].*F));
}

template <class Isa, class Unpack>
struct Block32Kernel {
  using Block = typename Unpack::Block;
  template <int T>
  static void run(const uint8_t* row, const MatmulActs& a, int64_t t0, int64_t n, float* out) {
    const auto* blocks = reinterpret_cast<const Block*>(row);
    const int64_t nb = n / kQBlock;
    const TokenRows<T> x = token_rows<T>(a, t0, n, nb, nb);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8) {
      __m256i dots[T][8];
      for (int j = 0; j < 8; ++j) {
        const __m256i q = Unpack::quants(blocks[b + j]);
        for (int t = 0; t < T; ++t)
          dots[t][j] = block32_dot<Isa, Unpack>(q, load_i8x32(x.q[t] + (b + j) * kQBlock));
      }
      // The 8 blocks' f16 scales, gathered in registers (8 stores and a 16-byte reload would
      // stall on store-to-load forwarding).
      const __m256 w_d = _mm256_cvtph_ps(block32_f16x8<&Block::d>(blocks + b));
      __m256 w_m = _mm256_setzero_ps();
      if constexpr (Unpack::kHasMin) w_m = _mm256_cvtph_ps(block32_f16x8<&Block::m>(blocks + b));
      for (int t = 0; t < T; ++t) {
        __m256i dot = hsum8_i32(dots[t]);
        const __m256i sums =
            _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.sums[t] + b)));
        if constexpr (Unpack::kOffset != 0)
          dot = _mm256_sub_epi32(dot, _mm256_mullo_epi32(sums, _mm256_set1_epi32(Unpack::kOffset)));
        const __m256 x_d = _mm256_loadu_ps(x.d[t] + b);
        acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(w_d, x_d), _mm256_cvtepi32_ps(dot), acc[t]);
        if constexpr (Unpack::kHasMin)
          acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(w_m, x_d), _mm256_cvtepi32_ps(sums), acc[t]);
      }
    }
    alignas(32) float lanes[T][8];
    for (int t = 0; t < T; ++t) _mm256_store_ps(lanes[t], acc[t]);
    for (; b < nb; ++b) {  // the last blocks, one at a time
      const Block& blk = blocks[b];
      const __m256i q = Unpack::quants(blk);
      const float w_d = f16c_to_f32(blk.d);
      float w_m = 0.0f;
      if constexpr (Unpack::kHasMin) w_m = f16c_to_f32(blk.m);
      for (int t = 0; t < T; ++t) {
        int32_t dot = hsum_i32(block32_dot<Isa, Unpack>(q, load_i8x32(x.q[t] + b * kQBlock)));
        dot -= Unpack::kOffset * x.sums[t][b];
        lanes[t][b % 8] = block32_lane_update<Unpack::kHasMin>(lanes[t][b % 8], w_d, w_m, x.d[t][b],
                                                               dot, x.sums[t][b]);
      }
    }
    for (int t = 0; t < T; ++t) out[t] = lanes8_reduce(lanes[t]);
  }
};

}  // namespace
}  // namespace tally::cpu::detail::simd
