// AVX2 + AVX-VNNI kernels (built with AVX2, FMA, F16C and AVX-VNNI flags; called only after
// run-time dispatch found AVX-VNNI on a CPU whose level is AVX2, e.g. Alder Lake, or Zen 5
// under TALLY_ISA=avx2). The quantized dots use the VEX vpdpbusd on 256-bit vectors, which
// replaces vpmaddubsw + vpmaddwd (+ vpaddd) with one instruction and cannot saturate; every
// loop, layout and float step is the AVX2 path's (matmul_interleaved_simd.h,
// matmul_simd_quant.h, the K-quant GEMM matmul_gemm_kquant_ymm.h, which here also takes
// IQ4_XS: vpdpbusd has no int16 pairs to saturate, and the 32-block GEMM
// matmul_gemm_block32_ymm.h), so every result is its bits. Float
// weights have no integer dot: the AVX2 kernels serve them as they are.
#include <immintrin.h>

#include "backend/cpu/matmul_gemm_block32_ymm.h"
#include "backend/cpu/matmul_gemm_kquant_ymm.h"
#include "backend/cpu/matmul_interleaved_simd.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_block32.h"
#include "backend/cpu/matmul_simd_iq4.h"
#include "backend/cpu/matmul_simd_k16.h"
#include "backend/cpu/matmul_simd_quant.h"
#include "backend/cpu/matmul_vnni_dot.h"

namespace tally::cpu::detail {

namespace {

struct VexDpbusd {
  static __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
    return _mm256_dpbusd_avx_epi32(acc, u, s);
  }
};
using AvxVnniDot = simd::VnniDot<VexDpbusd>;

// The super-block types: the GEMM from 8 tokens, the per-row kernels below.
template <class G, MatmulTileFn narrow>
constexpr MatmulTileFn kgemm = simd::tile_gemm_or_rows<simd::KGemmYmm<G, AvxVnniDot>, narrow>;

// The 32-block types with per-row kernels: the GEMM from 8 tokens, those kernels below.
template <class Unpack>
constexpr MatmulTileFn block32 =
    simd::tile_gemm_or_rows<simd::Block32GemmYmm<Unpack, AvxVnniDot>,
                            simd::tile_rows<simd::Block32Kernel<AvxVnniDot, Unpack>>>;

}  // namespace

const MatmulKernels& matmul_kernels_avx2_vnni() {
  static const MatmulKernels k = {
      "avx2-vnni",
      matmul_kernels_avx2().f32,
      matmul_kernels_avx2().f16,
      matmul_kernels_avx2().bf16,
      simd::tile_interleaved<AvxVnniDot, simd::Q8_0x8>,
      simd::tile_interleaved<AvxVnniDot, simd::Q4_0x8>,
      kgemm<simd::Q4KGemm, simd::tile_rows<simd::Q4KKernel<AvxVnniDot>>>,
      kgemm<simd::Q6KGemm, simd::tile_rows<simd::Q6KKernel<AvxVnniDot>>>,
      block32<simd::Q4_1Unpack>,
      block32<simd::Q5_0Unpack>,
      block32<simd::Q5_1Unpack>,
      kgemm<simd::K16Gemm<simd::Q2KUnpack>,
            simd::tile_rows<simd::K16Kernel<AvxVnniDot, simd::Q2KUnpack>>>,
      kgemm<simd::K16Gemm<simd::Q3KUnpack>,
            simd::tile_rows<simd::K16Kernel<AvxVnniDot, simd::Q3KUnpack>>>,
      kgemm<simd::Q5KGemm, simd::tile_rows<simd::Q4KKernel<AvxVnniDot, BlockQ5_K>>>,
      block32<simd::IQ4NLUnpack>,
      kgemm<simd::IQ4XSGemm, simd::tile_rows<simd::IQ4XSKernel<AvxVnniDot>>>,
      matmul_kernels_avx2().act32,
      matmul_kernels_avx2().act_k,
  };
  return k;
}

}  // namespace tally::cpu::detail
