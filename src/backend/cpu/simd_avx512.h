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
  // Lane l of the result is hsum(v[l]) for 16 vectors, bit for bit: the same additions of the
  // same pairs, done for all 16 at once by shuffling vectors together (15 adds, not 64).
  // Always inlined: its callers' arrays then stay in registers (out of line, a big kernel
  // unit may leave it, and the tiled attention pays a call and spills per position pair).
  [[gnu::always_inline]] static V hsum_lanes(const V* v) {
    V h[8], s[4], d[2];
    for (int m = 0; m < 8; ++m)  // h: each vector's lanes i + (i + 8), two vectors per zmm
      h[m] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0x44),
                           _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0xEE));
    for (int k = 0; k < 4; ++k)  // s: then i + (i + 4), one vector per 128-bit lane
      s[k] = _mm512_add_ps(_mm512_shuffle_f32x4(h[2 * k], h[2 * k + 1], 0x88),
                           _mm512_shuffle_f32x4(h[2 * k], h[2 * k + 1], 0xDD));
    for (int k = 0; k < 2; ++k)  // d: then (0 + 2, 1 + 3), as movehl
      d[k] = _mm512_add_ps(
          _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(s[2 * k]), _mm512_castps_pd(s[2 * k + 1]))),
          _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(s[2 * k]), _mm512_castps_pd(s[2 * k + 1]))));
    // 0 + 1, as movehdup: lane 4q + r now holds vector 4r + q.
    const V r = _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(2, 0, 2, 0)),
                              _mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
  }
};

}  // namespace
}  // namespace tally::cpu
