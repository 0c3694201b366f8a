// AVX2 + FMA primitives over 8 floats, for the kernel templates (*_simd.h). Include only from
// *_avx2.cpp files: everything here is compiled with -mavx2 -mfma and has internal linkage, so
// no AVX2 code can leak into baseline code through a shared inline symbol.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace tally::cpu {
namespace {

struct Avx2 {
  using V = __m256;
  static constexpr int kWidth = 8;

  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }    // a*b + c
  static V fnmadd(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a*b
  static V round_nearest(V a) {
    return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // 2^n for integral n in [-126, 127] (n as float).
  static V pow2i(V n) {
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  // a where x < limit, else b.
  static V select_lt(V x, V limit, V a, V b) {
    return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, limit, _CMP_LT_OQ));
  }
  static V select_gt(V x, V limit, V a, V b) {
    return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, limit, _CMP_GT_OQ));
  }
  // (x0, x1, x2, x3, ...) -> (x1, x0, x3, x2, ...)
  static V swap_pairs(V a) { return _mm256_permute_ps(a, 0xB1); }
  // Stops the compiler from fusing a product into a later add (keeps mul-then-add rounding).
  static V opaque(V a) {
    __asm__("" : "+x"(a));
    return a;
  }
  // Sum of the lanes in a fixed order: halves, then quarters, then pairs.
  static float hsum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // Lane l of the result is hsum(v[l]) for 8 vectors, bit for bit: the same additions of the
  // same pairs, done for all 8 at once by shuffling vectors together (7 adds, not 24).
  // Always inlined: its callers' arrays then stay in registers (out of line, a big kernel
  // unit may leave it, and the tiled attention pays a call and spills per position pair).
  [[gnu::always_inline]] static V hsum_lanes(const V* v) {
    V h[4], d[2];
    for (int m = 0; m < 4; ++m)  // h: each vector's lanes i + (i + 4), two vectors per ymm
      h[m] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * m], v[2 * m + 1], 0x20),
                           _mm256_permute2f128_ps(v[2 * m], v[2 * m + 1], 0x31));
    for (int k = 0; k < 2; ++k)  // d: then (0 + 2, 1 + 3), as movehl
      d[k] = _mm256_add_ps(
          _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(h[2 * k]), _mm256_castps_pd(h[2 * k + 1]))),
          _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(h[2 * k]), _mm256_castps_pd(h[2 * k + 1]))));
    // 0 + 1, as movehdup: lane 4q + r now holds vector 2r + q.
    const V r = _mm256_add_ps(_mm256_shuffle_ps(d[0], d[1], _MM_SHUFFLE(2, 0, 2, 0)),
                              _mm256_shuffle_ps(d[0], d[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  }
};

}  // namespace
}  // namespace tally::cpu
