// Per-row kernels for the low-bit K-quants with 16-element sub-blocks (Q2_K, Q3_K) on 256-bit
// integer vectors; included only by matmul_avx2.cpp and matmul_avx512.cpp, whose `Isa`
// policies supply the scaled u8 x s8 dot (matmul_simd_quant.h). Their 2-bit fields sit as
// Q6_K's high bits do: quarter k of half h (32 elements) is bits 2k..2k+1 of qs[32h + l].
// Results follow the canonical order of matmul_kernels.h, as in matmul_scalar.cpp.
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

// Q3_K: weights (s - 32) * (q - 4), q = 2 bits | hmask bit << 2.
struct Q3KUnpack {
  using Block = BlockQ3_K;
  static constexpr bool kHasMin = false;
  static constexpr int kOffset = 4;
  static constexpr int kMaxQuant = 7;  // quants() is 3 bits
  // The 16 scales s - 32 as int16 (q3k_scale's packing, four at a time in 32-bit words).
  [[gnu::always_inline]] static inline __m256i scales(const Block& b) {
    uint32_t w[3];
    std::memcpy(w, b.scales, 12);
    const uint32_t lo4 = 0x0f0f0f0fu, lo2 = 0x03030303u;
    // Built in registers (a store of four words and a 16-byte reload would stall on
    // store-to-load forwarding once per block).
    const __m128i s8 = _mm_setr_epi32(
        static_cast<int32_t>((w[0] & lo4) | ((w[2] & lo2) << 4)),
        static_cast<int32_t>((w[1] & lo4) | (((w[2] >> 2) & lo2) << 4)),
        static_cast<int32_t>(((w[0] >> 4) & lo4) | (((w[2] >> 4) & lo2) << 4)),
        static_cast<int32_t>(((w[1] >> 4) & lo4) | (((w[2] >> 6) & lo2) << 4)));
    return _mm256_sub_epi16(_mm256_cvtepu8_epi16(s8), _mm256_set1_epi16(32));
  }
  [[gnu::always_inline]] static inline __m256i mins(const Block&) { return _mm256_setzero_si256(); }
  // Quants of quarter k of half h, 0..7; hm: the 32 hmask bytes.
  [[gnu::always_inline]] static inline __m256i quants(__m256i qs_h, __m256i hm, int h, int k) {
    const __m256i low = _mm256_and_si256(_mm256_srli_epi16(qs_h, 2 * k), _mm256_set1_epi8(3));
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + k), _mm256_set1_epi8(1));
    return _mm256_or_si256(low, _mm256_slli_epi16(high, 2));
  }
  [[gnu::always_inline]] static inline __m256i high_bits(const Block& b) {
    return load_i8x32(b.hmask);
  }
  [[gnu::always_inline]] static inline float d(const Block& b) { return f16c_to_f32(b.d); }
  [[gnu::always_inline]] static inline float dmin(const Block&) { return 0.0f; }
};

// Q2_K: weights (scales & 15) * q - (scales >> 4) * dmin / d.
struct Q2KUnpack {
  using Block = BlockQ2_K;
  static constexpr bool kHasMin = true;
  static constexpr int kOffset = 0;
  static constexpr int kMaxQuant = 3;  // quants() is 2 bits
  [[gnu::always_inline]] static inline __m256i scales(const Block& b) {
    const __m256i s =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
    return _mm256_and_si256(s, _mm256_set1_epi16(15));
  }
  [[gnu::always_inline]] static inline __m256i mins(const Block& b) {
    const __m256i s =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
    return _mm256_srli_epi16(s, 4);
  }
  [[gnu::always_inline]] static inline __m256i quants(__m256i qs_h, __m256i, int, int k) {
    return _mm256_and_si256(_mm256_srli_epi16(qs_h, 2 * k), _mm256_set1_epi8(3));
  }
  [[gnu::always_inline]] static inline __m256i high_bits(const Block&) {
    return _mm256_setzero_si256();
  }
  [[gnu::always_inline]] static inline float d(const Block& b) { return f16c_to_f32(b.d); }
  [[gnu::always_inline]] static inline float dmin(const Block& b) { return f16c_to_f32(b.dmin); }
};

template <class Isa, class Unpack>
struct K16Kernel {
  using Block = typename Unpack::Block;
  template <int T>
  static void run(const uint8_t* row, const MatmulActs& a, int64_t t0, int64_t n, float* out) {
    const auto* blocks = reinterpret_cast<const Block*>(row);
    const int64_t nb = n / kQKBlock;
    const TokenRows<T> x = token_rows<T>(a, t0, n, nb, n / kActSumGroup);
    float lanes[T][8] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const Block& blk = blocks[b];
      const __m256i scales = Unpack::scales(blk);  // 16 x i16, one per sub-block of 16
      const __m256i hm = Unpack::high_bits(blk);
      __m256i acc[T];
      for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_si256();
      for (int h = 0; h < 2; ++h) {
        // Scales 8h..8h+7 in both 128-bit halves.
        const __m256i sc = h == 0 ? _mm256_permute2x128_si256(scales, scales, 0x00)
                                  : _mm256_permute2x128_si256(scales, scales, 0x11);
        const __m256i qs_h = load_i8x32(blk.qs + 32 * h);
        for (int k = 0; k < 4; ++k) {
          const __m256i q = Unpack::quants(qs_h, hm, h, k);
          const __m256i sck = broadcast_i16_pair(sc, 2 * k, 2 * k + 1);
          for (int t = 0; t < T; ++t) {
            const int8_t* xt = x.q[t] + b * kQKBlock + 128 * h + 32 * k;
            acc[t] = _mm256_add_epi32(acc[t], Isa::dot_scaled(q, load_i8x32(xt), sck));
          }
        }
      }
      const float w_d = Unpack::d(blk);
      for (int t = 0; t < T; ++t) {
        const __m256i sums = load_i8x32(x.sums[t] + b * (kQKBlock / kActSumGroup));  // 16 x i16
        if constexpr (Unpack::kHasMin) {
          int32_t dot = 0, min_dot = 0;
          hsum2_i32(acc[t], _mm256_madd_epi16(sums, Unpack::mins(blk)), &dot, &min_dot);
          lanes[t][b % 8] =
              q4k_lane_update(lanes[t][b % 8], w_d, Unpack::dmin(blk), x.d[t][b], dot, min_dot);
        } else {
          // The weights are q - kOffset: subtract kOffset * sum_j scale_j * (sum of x over j).
          const __m256i offsets = _mm256_mullo_epi32(_mm256_madd_epi16(sums, scales),
                                                     _mm256_set1_epi32(Unpack::kOffset));
          const int32_t dot = hsum_i32(_mm256_sub_epi32(acc[t], offsets));
          lanes[t][b % 8] = fma_f32(w_d * x.d[t][b], static_cast<float>(dot), lanes[t][b % 8]);
        }
      }
    }
    for (int t = 0; t < T; ++t) out[t] = lanes8_reduce(lanes[t]);
  }
};

}  // namespace
}  // namespace tally::cpu::detail::simd
