// AVX-512 VNNI kernels (built with AVX-512 F/BW/VL/VNNI flags; called only after run-time
// dispatch found VNNI). The quantized dots use vpdpbusd on 256-bit vectors (AVX512-VL), which
// replaces maddubs + madd with one instruction and cannot saturate; the rest of the
// arithmetic, and so every result, is the AVX2 path's (matmul_interleaved_simd.h,
// matmul_simd_quant.h). Q8_0 / Q4_0 with several tokens take the 512-bit GEMM
// (matmul_gemm_zmm.h), one token the 256-bit kernels: the same bits either way. So do the
// super-block types with 8 tokens or more (matmul_gemm_kquant_zmm.h), and so do Q4_1, Q5_0,
// Q5_1 and IQ4_NL (matmul_gemm_block32_zmm.h). Float weights
// with several tokens take 512-bit fma (matmul_float_zmm.h); one token, memory-bound, the AVX2
// kernels. All follow the canonical order (matmul_kernels.h).
// GCC 12's AVX-512 intrinsics start from an undefined vector (`__m512 __Y = __Y;`), which
// -W(maybe-)uninitialized reports wherever they are inlined; set before <immintrin.h>.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "backend/cpu/matmul_float_zmm.h"
#include "backend/cpu/matmul_gemm_block32_zmm.h"
#include "backend/cpu/matmul_gemm_kquant_zmm.h"
#include "backend/cpu/matmul_gemm_zmm.h"
#include "backend/cpu/matmul_interleaved_simd.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_block32.h"
#include "backend/cpu/matmul_simd_iq4.h"
#include "backend/cpu/matmul_simd_k16.h"
#include "backend/cpu/matmul_simd_quant.h"
#include "backend/cpu/matmul_vnni_dot.h"

namespace tally::cpu::detail {

namespace {

// vpdpbusd in its EVEX form on 256-bit vectors (AVX512-VL).
struct EvexDpbusd {
  static __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(acc, u, s);
  }
};
using VnniDot = simd::VnniDot<EvexDpbusd>;

// Float weights: the 512-bit tile for several tokens, the 256-bit kernels otherwise.
template <class Load, MatmulTileFn MatmulKernels::*narrow>
void tile_float(const MatmulTile& tile) {
  simd::tile_float_zmm<Load>(tile, matmul_kernels_avx2().*narrow);
}

// The super-block types: the GEMM from 8 tokens, the per-row kernels below.
template <class G, MatmulTileFn narrow>
constexpr MatmulTileFn kgemm = simd::tile_gemm_or_rows<simd::KGemmZmm<G>, narrow>;

// The 32-block types with per-row kernels: the GEMM from 8 tokens, those kernels below.
template <class Unpack>
constexpr MatmulTileFn block32 =
    simd::tile_gemm_or_rows<simd::Block32GemmZmm<Unpack>, simd::tile_rows<simd::Block32Kernel<VnniDot, Unpack>>>;

}  // namespace

const MatmulKernels& matmul_kernels_avx512_vnni() {
  static const MatmulKernels k = {
      "avx512-vnni",
      tile_float<simd::PairF32, &MatmulKernels::f32>,
      tile_float<simd::PairF16, &MatmulKernels::f16>,
      tile_float<simd::PairBf16, &MatmulKernels::bf16>,
      simd::tile_gemm_zmm<VnniDot, simd::Q8_0Zmm>,
      simd::tile_gemm_zmm<VnniDot, simd::Q4_0Zmm>,
      kgemm<simd::Q4KGemm, simd::tile_rows<simd::Q4KKernel<VnniDot>>>,
      kgemm<simd::Q6KGemm, simd::tile_rows<simd::Q6KKernel<VnniDot>>>,
      block32<simd::Q4_1Unpack>,
      block32<simd::Q5_0Unpack>,
      block32<simd::Q5_1Unpack>,
      kgemm<simd::K16Gemm<simd::Q2KUnpack>,
                           simd::tile_rows<simd::K16Kernel<VnniDot, simd::Q2KUnpack>>>,
      kgemm<simd::K16Gemm<simd::Q3KUnpack>,
                           simd::tile_rows<simd::K16Kernel<VnniDot, simd::Q3KUnpack>>>,
      kgemm<simd::Q5KGemm, simd::tile_rows<simd::Q4KKernel<VnniDot, BlockQ5_K>>>,
      block32<simd::IQ4NLUnpack>,
      kgemm<simd::IQ4XSGemm,
                           simd::tile_rows<simd::IQ4XSKernel<VnniDot>>>,
      matmul_kernels_avx2().act32,
      matmul_kernels_avx2().act_k,
  };
  return k;
}

}  // namespace tally::cpu::detail
