// The integer-dot policy (the `Isa` of matmul_simd_quant.h and matmul_interleaved_simd.h) for
// CPUs with vpdpbusd on 256-bit vectors: AVX-512 VNNI's EVEX form (matmul_avx512.cpp) or
// AVX-VNNI's VEX form (matmul_avxvnni.cpp). `Dp::dpbusd(acc, u8, s8)` is the one instruction;
// each file supplies its own Dp in an anonymous namespace, so every instantiation stays in the
// file (and the flags) that made it. vpdpbusd sums four u8 x s8 products into int32 without
// saturation: the same integers as the AVX2 maddubs sequence, so the same bits downstream.
#pragma once

#include <immintrin.h>

namespace tally::cpu::detail::simd {
// Internal linkage: this header is compiled into objects with different ISA flags (avx2,
// avx2-vnni, avx512), and a shared template instance would let the linker keep any one
// copy, AVX-512 instructions included, for all of them.
namespace {

template <class Dp>
struct VnniDot {
  // Sums go straight to int32: no saturation, and a scale is a separate vpmulld.
  static constexpr bool kInt16Pairs = false;
  static __m256i dot(__m256i u, __m256i s) { return Dp::dpbusd(_mm256_setzero_si256(), u, s); }
  // vpdpbusd's int32 lane i holds elements 4i..4i+3: scale it by int16 lane 2i of scale16
  // (the scale of those elements; lanes 2i and 2i+1 are equal).
  static __m256i dot_scaled(__m256i u, __m256i s, __m256i scale16) {
    const __m256i scale32 = _mm256_srai_epi32(_mm256_slli_epi32(scale16, 16), 16);
    return _mm256_mullo_epi32(dot(u, s), scale32);
  }
  using Q4Acc = __m256i;
  static __m256i q4_zero() { return _mm256_setzero_si256(); }
  static __m256i q4_step(__m256i acc, __m256i u, __m256i s) { return Dp::dpbusd(acc, u, s); }
  static __m256i q4_finish(__m256i acc) { return acc; }
  static __m256i q8_step(__m256i acc, __m256i u, __m256i s) { return Dp::dpbusd(acc, u, s); }
};

}  // namespace
}  // namespace tally::cpu::detail::simd
