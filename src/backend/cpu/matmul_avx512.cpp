// AVX-512 VNNI kernels (built with AVX-512 F/BW/VL/VNNI flags; called only after run-time
// dispatch found VNNI). The quantized dots use vpdpbusd on 256-bit vectors (AVX512-VL), which
// replaces maddubs + madd with one instruction and cannot saturate; the rest of the
// arithmetic, and so every result, is the AVX2 path's (matmul_interleaved_simd.h,
// matmul_simd_quant.h). Float weights are memory-bound and use the AVX2 kernels, which give
// the canonical order (matmul_kernels.h).
#include <immintrin.h>

#include "backend/cpu/matmul_interleaved_simd.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_quant.h"

namespace tally::cpu::detail {

namespace {

struct VnniDot {
  static __m256i dot(__m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
  }
  // vpdpbusd's int32 lane i holds elements 4i..4i+3: scale it by int16 lane 2i of scale16
  // (the scale of those elements; lanes 2i and 2i+1 are equal).
  static __m256i dot_scaled(__m256i u, __m256i s, __m256i scale16) {
    const __m256i scale32 = _mm256_srai_epi32(_mm256_slli_epi32(scale16, 16), 16);
    return _mm256_mullo_epi32(dot(u, s), scale32);
  }
  using Q4Acc = __m256i;
  static __m256i q4_zero() { return _mm256_setzero_si256(); }
  static __m256i q4_step(__m256i acc, __m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(acc, u, s);
  }
  static __m256i q4_finish(__m256i acc) { return acc; }
  static __m256i q8_step(__m256i acc, __m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(acc, u, s);
  }
};

}  // namespace

const MatmulKernels& matmul_kernels_avx512_vnni() {
  static const MatmulKernels k = {
      "avx512-vnni",
      matmul_kernels_avx2().f32,
      matmul_kernels_avx2().f16,
      matmul_kernels_avx2().bf16,
      simd::tile_interleaved<VnniDot, simd::Q8_0x8>,
      simd::tile_interleaved<VnniDot, simd::Q4_0x8>,
      simd::tile_rows<simd::Q4KKernel<VnniDot>>,
      simd::tile_rows<simd::Q6KKernel<VnniDot>>,
      matmul_kernels_avx2().act32,
      matmul_kernels_avx2().act_k,
  };
  return k;
}

}  // namespace tally::cpu::detail
