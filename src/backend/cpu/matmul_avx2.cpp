// AVX2 + FMA + F16C kernels (built with those flags; called only after run-time dispatch).
// Float weights: eight fma lanes per (row, token) exactly as matmul_scalar.cpp orders them
// (matmul_float_ymm.h: one token's matvec, and a GEMM for several).
// Quantized weights: maddubs + madd integer dots, Q8_0 / Q4_0 over the interleaved layout
// (matmul_interleaved_simd.h), the K-quants in matmul_simd_quant.h (fewer than 8 tokens) and
// matmul_gemm_kquant_ymm.h (the GEMM, from 8 tokens), Q4_1 / Q5_0 / Q5_1 / IQ4_NL in
// matmul_simd_block32.h (fewer than 8 tokens) and matmul_gemm_block32_ymm.h (the GEMM).
#include <immintrin.h>

#include "backend/cpu/matmul_float_ymm.h"
#include "backend/cpu/matmul_gemm_block32_ymm.h"
#include "backend/cpu/matmul_gemm_kquant_ymm.h"
#include "backend/cpu/matmul_interleaved_simd.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_block32.h"
#include "backend/cpu/matmul_simd_iq4.h"
#include "backend/cpu/matmul_simd_k16.h"
#include "backend/cpu/matmul_simd_quant.h"

namespace tally::cpu::detail {

namespace {

struct Avx2Dot {
  // The dot's pairs pass through int16 (vpmaddubsw): they may saturate, and dot_scaled's
  // scale rides on the vpmaddwd for free (matmul_gemm_kquant_ymm.h).
  static constexpr bool kInt16Pairs = true;
  // maddubs: u8 * s8 pairs into int16. No saturation for any weight type here: the largest
  // pair is 2 * 128 * 127 (Q8_0 with |w| = 128 and activations within +-127).
  static __m256i dot(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }
  static __m256i dot_scaled(__m256i u, __m256i s, __m256i scale16) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scale16);
  }
  // Interleaved Q4_0: a block's 8 maddubs of quants 0..15 against |x| <= 127 sum to at most
  // 8 * 2 * 15 * 127 = 30480 per int16 lane, so the block accumulates in int16.
  using Q4Acc = __m256i;
  static __m256i q4_zero() { return _mm256_setzero_si256(); }
  static __m256i q4_step(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi16(acc, _mm256_maddubs_epi16(u, s));
  }
  // Pairs of int16 lanes summed into int32 with shifts, not vpmaddwd: the multiply ports
  // already carry the block's 8 vpmaddubsw, and the shift ports are idle.
  static __m256i q4_finish(__m256i acc) {
    return _mm256_add_epi32(_mm256_srai_epi32(_mm256_slli_epi32(acc, 16), 16),
                            _mm256_srai_epi32(acc, 16));
  }
  // Interleaved Q8_0: pairs reach 2 * 128 * 127, so each step widens to int32 at once.
  static __m256i q8_step(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, dot(u, s));
  }
};

// The super-block types: the GEMM from 8 tokens, the per-row kernels below.
template <class G, MatmulTileFn narrow>
constexpr MatmulTileFn kgemm = simd::tile_gemm_or_rows<simd::KGemmYmm<G, Avx2Dot>, narrow>;

// The 32-block types with per-row kernels: the GEMM from 8 tokens, those kernels below.
template <class Unpack>
constexpr MatmulTileFn block32 =
    simd::tile_gemm_or_rows<simd::Block32GemmYmm<Unpack, Avx2Dot>,
                            simd::tile_rows<simd::Block32Kernel<Avx2Dot, Unpack>>>;

}  // namespace

const MatmulKernels& matmul_kernels_avx2() {
  static const MatmulKernels k = {
      "avx2",
      simd::tile_float_ymm<simd::LoadF32>,
      simd::tile_float_ymm<simd::LoadF16>,
      simd::tile_float_ymm<simd::LoadBf16>,
      simd::tile_interleaved<Avx2Dot, simd::Q8_0x8>,
      simd::tile_interleaved<Avx2Dot, simd::Q4_0x8>,
      kgemm<simd::Q4KGemm, simd::tile_rows<simd::Q4KKernel<Avx2Dot>>>,
      kgemm<simd::Q6KGemm, simd::tile_rows<simd::Q6KKernel<Avx2Dot>>>,
      block32<simd::Q4_1Unpack>,
      block32<simd::Q5_0Unpack>,
      block32<simd::Q5_1Unpack>,
      kgemm<simd::K16Gemm<simd::Q2KUnpack>,
            simd::tile_rows<simd::K16Kernel<Avx2Dot, simd::Q2KUnpack>>>,
      kgemm<simd::K16Gemm<simd::Q3KUnpack>,
            simd::tile_rows<simd::K16Kernel<Avx2Dot, simd::Q3KUnpack>>>,
      kgemm<simd::Q5KGemm, simd::tile_rows<simd::Q4KKernel<Avx2Dot, BlockQ5_K>>>,
      block32<simd::IQ4NLUnpack>,
      simd::tile_rows<simd::IQ4XSKernel<Avx2Dot>>,  // no GEMM: its u8 form saturates vpmaddubsw
      act_quantize_row32_avx2,
      act_quantize_row_k_avx2,
  };
  return k;
}

}  // namespace tally::cpu::detail
