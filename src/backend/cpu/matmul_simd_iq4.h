// Kernels for the non-linear 4-bit types (IQ4_NL, IQ4_XS) on 256-bit integer vectors; included
// only by matmul_avx2.cpp and matmul_avx512.cpp. A 4-bit code becomes its int8 grid value
// (kIq4Values) through one byte shuffle; the signed weights then go through the u8 x s8 dot
// as |w| times x with w's sign. IQ4_NL is a 32-block type (matmul_simd_block32.h's kernel);
// IQ4_XS a super-block of 8 sub-blocks of 32 with signed 6-bit scales, in the order of Q6_K
// (one fma per super-block, matmul_kernels.h).
#pragma once

#include <immintrin.h>

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_block32.h"
#include "backend/cpu/matmul_simd_quant.h"
#include "tensor/quant_blocks.h"

namespace tally::cpu::detail::simd {
// Internal linkage: this header is compiled into objects with different ISA flags (avx2,
// avx2-vnni, avx512), and a shared template instance would let the linker keep any one
// copy, AVX-512 instructions included, for all of them.
namespace {

// The grid values of 32 codes (bytes 0..15).
[[gnu::always_inline]] static inline __m256i iq4_grid(__m256i codes) {
  const __m128i grid = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values));
  return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(grid), codes);
}

struct IQ4NLUnpack {
  using Block = BlockIQ4_NL;
  static constexpr bool kHasMin = false, kSigned = true;
  static constexpr int kOffset = 0, kMaxQuant = 127;  // |grid value|
  [[gnu::always_inline]] static inline __m256i quants(const Block& b) {
    return iq4_grid(block32_nibbles(b.qs));
  }
};

template <class Isa>
struct IQ4XSKernel {
  template <int T>
  static void run(const uint8_t* row, const MatmulActs& a, int64_t t0, int64_t n, float* out) {
    const auto* blocks = reinterpret_cast<const BlockIQ4_XS*>(row);
    const int64_t nb = n / kQKBlock;
    const TokenRows<T> x = token_rows<T>(a, t0, n, nb, n / kActSumGroup);
    float lanes[T][8] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const BlockIQ4_XS& blk = blocks[b];
      __m256i acc[T];
      for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i q = iq4_grid(block32_nibbles(blk.qs + 16 * j));
        const __m256i abs_q = _mm256_abs_epi8(q);
        const __m256i scale = _mm256_set1_epi16(static_cast<int16_t>(iq4xs_scale(blk, j) - 32));
        for (int t = 0; t < T; ++t) {
          const __m256i xt = load_i8x32(x.q[t] + b * kQKBlock + 32 * j);
          acc[t] = _mm256_add_epi32(acc[t], Isa::dot_scaled(abs_q, _mm256_sign_epi8(xt, q), scale));
        }
      }
      const float w_d = f16c_to_f32(blk.d);
      for (int t = 0; t < T; ++t)
        lanes[t][b % 8] =
            fma_f32(w_d * x.d[t][b], static_cast<float>(hsum_i32(acc[t])), lanes[t][b % 8]);
    }
    for (int t = 0; t < T; ++t) out[t] = lanes8_reduce(lanes[t]);
  }
};

}  // namespace
}  // namespace tally::cpu::detail::simd
