// The int8 operations of the AVX2 int8 scores (attention_int8_simd.h): 8 positions a pass,
// vpmaddubsw + vpmaddwd. q8_0 K enters signed and the sign trick keeps vpmaddubsw's int16 pairs
// from saturating (|k| times the query with k's sign: |k|, |q| <= 127); q4_0 K enters as its
// nibble (level + 8, small enough to multiply directly). Include only from
// attention_avx2.cpp, after simd_half_avx2.h.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backend/cpu/attention_int8_simd.h"

namespace tally::cpu {
namespace {

struct Int8OpsAvx2 {
  static constexpr int kN = 8;
  static constexpr int kQ8Bias = 0;  // signed: the sign trick
  using I = __m256i;
  using F = __m256;

  static I zero_i() { return _mm256_setzero_si256(); }
  static I load_i(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static I sub_i(I a, int32_t b) { return _mm256_sub_epi32(a, _mm256_set1_epi32(b)); }
  static F to_f(I a) { return _mm256_cvtepi32_ps(a); }
  static F load_f(const float* p) { return _mm256_loadu_ps(p); }
  static void store_f(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  template <bool kSigned>
  static I dot(I acc, I k, int32_t q) {
    const I qv = _mm256_set1_epi32(q);
    I pairs;
    if constexpr (kSigned)
      pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(k), _mm256_sign_epi8(qv, k));
    else
      pairs = _mm256_maddubs_epi16(k, qv);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }

  // kt[j] = dword j of segment sg of the 8 rows: an 8 x 8 dword transpose (4 x 4 within
  // 128-bit lanes, then the lanes exchanged).
  template <class EK>
  static void load_block(const typename EK::Row* rows, int64_t sg, I* kt) {
    I r[8];
    for (int k = 0; k < 8; ++k) r[k] = block<EK>(rows[k], sg);
    I u[4], v[4];
    transpose_in_lanes(r, u);
    transpose_in_lanes(r + 4, v);
    for (int j = 0; j < 4; ++j) {
      kt[j] = _mm256_permute2x128_si256(u[j], v[j], 0x20);
      kt[j + 4] = _mm256_permute2x128_si256(u[j], v[j], 0x31);
    }
  }

 private:
  template <class EK>
  static I block(typename EK::Row r, int64_t sg) {
    if constexpr (std::is_same_v<EK, KvQ4_0>) {
      const I x = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r.block[sg].qs)));
      return _mm256_and_si256(_mm256_srlv_epi64(x, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(15));
    } else {
      return load_i(r.block[sg].qs);
    }
  }
  static void transpose_in_lanes(const I* in, I* out) {
    const I t0 = _mm256_unpacklo_epi32(in[0], in[1]), t1 = _mm256_unpackhi_epi32(in[0], in[1]);
    const I t2 = _mm256_unpacklo_epi32(in[2], in[3]), t3 = _mm256_unpackhi_epi32(in[2], in[3]);
    out[0] = _mm256_unpacklo_epi64(t0, t2);
    out[1] = _mm256_unpackhi_epi64(t0, t2);
    out[2] = _mm256_unpacklo_epi64(t1, t3);
    out[3] = _mm256_unpackhi_epi64(t1, t3);
  }
};

}  // namespace
}  // namespace tally::cpu
