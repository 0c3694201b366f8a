// The int8 operations of the 256-bit int8 scores (attention_int8_simd.h): 8 positions a pass,
// with the integer dot of a policy Dp. AVX2 (MaddubsDot below): vpmaddubsw + vpmaddwd; q8_0 K
// enters signed and the sign trick keeps vpmaddubsw's int16 pairs from saturating (|k| times
// the query with k's sign: |k|, |q| <= 127). AVX-VNNI (attention_avxvnni.cpp): vpdpbusd on
// unsigned K bytes (level + 128 for q8_0). q4_0 K enters as its nibble (level + 8) on both.
// The integer sums are exact either way, so both give the same bits. Include only from
// attention_avx2.cpp / attention_avxvnni.cpp, after simd_half_avx2.h.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backend/cpu/attention_int8_simd.h"

namespace tally::cpu {
namespace {

// vpmaddubsw + vpmaddwd: acc + each lane's 4-byte dot of K with the query dword qv.
struct MaddubsDot {
  static constexpr int kQ8Bias = 0;  // signed: the sign trick
  template <bool kSigned>
  static __m256i dot(__m256i acc, __m256i k, __m256i qv) {
    __m256i pairs;
    if constexpr (kSigned)
      pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(k), _mm256_sign_epi8(qv, k));
    else
      pairs = _mm256_maddubs_epi16(k, qv);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
};

template <class Dp>
struct Int8OpsYmm {
  static constexpr int kN = 8;
  static constexpr int kQ8Bias = Dp::kQ8Bias;
  using I = __m256i;
  using F = __m256;

  static I zero_i() { return _mm256_setzero_si256(); }
  static I load_i(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static I sub_i(I a, int32_t b) { return _mm256_sub_epi32(a, _mm256_set1_epi32(b)); }
  static F to_f(I a) { return _mm256_cvtepi32_ps(a); }
  // 8 f16 values widened exactly (f16_to_f32's bits).
  static F load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void store_f(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  template <bool kSigned>
  static I dot(I acc, I k, int32_t q) {
    return Dp::template dot<kSigned>(acc, k, _mm256_set1_epi32(q));
  }

  // kt[j] = dword j of segment sg of the 8 rows (biased by kQ8Bias for q8_0): an 8 x 8 dword
  // transpose (4 x 4 within 128-bit lanes, then the lanes exchanged).
  template <class EK>
  [[gnu::always_inline]] static void load_block(const typename EK::Row* rows, int64_t sg, I* kt) {
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
    } else if constexpr (kQ8Bias == 128) {
      return _mm256_xor_si256(load_i(r.block[sg].qs), _mm256_set1_epi8(static_cast<char>(0x80)));
    } else {
      static_assert(kQ8Bias == 0);
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

using Int8OpsAvx2 = Int8OpsYmm<MaddubsDot>;

}  // namespace
}  // namespace tally::cpu
