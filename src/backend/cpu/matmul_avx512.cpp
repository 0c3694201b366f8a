// AVX-512 VNNI kernels (built with AVX-512 F/BW/VL/VNNI flags; called only after run-time
// dispatch found VNNI). The quantized dots use vpdpbusd on 256-bit vectors (AVX512-VL), which
// replaces maddubs + madd with one instruction and cannot saturate; the rest of the
// arithmetic, and so every result, is the AVX2 path's (matmul_simd_quant.h). Float weights are
// memory-bound and use the AVX2 kernels, which give the canonical order (matmul_kernels.h).
#include <immintrin.h>

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_quant.h"

namespace tally::cpu::detail {

namespace {

struct VnniDot {
  static __m256i dot(__m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
  }
  // Lanes 0..3 hold elements 0..15, lanes 4..7 elements 16..31.
  static __m256i dot_scaled(__m256i u, __m256i s, int lo, int hi) {
    return _mm256_mullo_epi32(dot(u, s), _mm256_set_m128i(_mm_set1_epi32(hi), _mm_set1_epi32(lo)));
  }
};

}  // namespace

const MatmulKernels& matmul_kernels_avx512_vnni() {
  static const MatmulKernels k = {
      "avx512-vnni",
      matmul_kernels_avx2().f32,
      matmul_kernels_avx2().f16,
      matmul_kernels_avx2().bf16,
      simd::tile_rows<simd::Block32Kernel<VnniDot, simd::Q8_0Ops>>,
      simd::tile_rows<simd::Block32Kernel<VnniDot, simd::Q4_0Ops>>,
      simd::tile_rows<simd::Q4KKernel<VnniDot>>,
      simd::tile_rows<simd::Q6KKernel<VnniDot>>,
  };
  return k;
}

}  // namespace tally::cpu::detail
