// AVX-512 (F, BW, VL, DQ) + FMA primitives over 16 floats, for the kernel templates
// (*_simd.h). Include only from *_avx512.cpp files: everything here is compiled with the
// AVX-512 flags and has internal linkage, so none of it can leak into baseline code.
#pragma once

// GCC 12's AVX-512 intrinsics start from `__m512 __Y = __Y;` (an undefined vector), which
// -W(maybe-)uninitialized reports wherever they are inlined. The state must be set before
// <immintrin.h> is first read, so this header goes first in every *_avx512.cpp.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>

namespace tally::cpu {
namespace {

struct Avx512 {
  using V = __m512;
  static constexpr int kWidth = 16;

  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }    // a*b + c
  static V fnmadd(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a*b
  static V round_nearest(V a) {
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // 2^n for integral n in [-126, 127] (n as float).
  static V pow2i(V n) {
    const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
  }
  // a where x < limit, else b.
  static V select_lt(V x, V limit, V a, V b) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, limit, _CMP_LT_OQ), b, a);
  }
  static V select_gt(V x, V limit, V a, V b) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, limit, _CMP_GT_OQ), b, a);
  }
  // (x0, x1, x2, x3, ...) -> (x1, x0, x3, x2, ...)
  static V swap_pairs(V a) { return _mm512_permute_ps(a, 0xB1); }
  // Stops the compiler from fusing a product into a later add (keeps mul-then-add rounding).
  static V opaque(V a) {
    __asm__("" : "+v"(a));
    return a;
  }
  // Sum of the lanes in a fixed order: halves down to one lane.
  static float hsum(V v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                                   _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace
}  // namespace tally::cpu
