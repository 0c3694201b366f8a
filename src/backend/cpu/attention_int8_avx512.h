// The int8 operations of the AVX-512 int8 scores (attention_int8_simd.h): 16 positions a
// pass, VNNI vpdpbusd (unsigned K bytes = level + 128 for q8_0, the nibble for q4_0, times the
// signed query). Include only from attention_avx512.cpp, after simd_half_avx512.h.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backend/cpu/attention_int8_simd.h"

namespace tally::cpu {
namespace {

struct Int8OpsAvx512 {
  static constexpr int kN = 16;
  static constexpr int kQ8Bias = 128;
  using I = __m512i;
  using F = __m512;

  static I zero_i() { return _mm512_setzero_si512(); }
  static I load_i(const void* p) { return _mm512_loadu_si512(p); }
  static I sub_i(I a, int32_t b) { return _mm512_sub_epi32(a, _mm512_set1_epi32(b)); }
  static F to_f(I a) { return _mm512_cvtepi32_ps(a); }
  // 16 f16 values widened exactly (f16_to_f32's bits).
  static F load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static void store_f(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  // acc + the 4-byte dot of each lane's unsigned K bytes with the signed query dword.
  template <bool kSigned>
  static I dot(I acc, I k, int32_t q) {
    static_assert(!kSigned, "K enters with a bias here");
    return _mm512_dpbusd_epi32(acc, k, _mm512_set1_epi32(q));
  }

  // kt[j] = dword j (bytes 4j..4j+3) of segment sg of the 16 rows, biased: a 16 x 8 dword
  // transpose. Register k of a holds rows k and k + 4 (256-bit halves), of b rows k + 8 and
  // k + 12, so after the 4 x 4 transposes within 128-bit lanes, lanes 0 and 2 of each pair hold
  // rows 0-3 / 4-7 / 8-11 / 12-15 of one dword and lanes 1 and 3 those of dword j + 4.
  template <class EK>
  [[gnu::always_inline]] static void load_block(const typename EK::Row* rows, int64_t sg, I* kt) {
    I a[4], b[4];
    for (int k = 0; k < 4; ++k) {
      a[k] = block_pair<EK>(rows[k], rows[k + 4], sg);
      b[k] = block_pair<EK>(rows[k + 8], rows[k + 12], sg);
    }
    I u[4], v[4];
    transpose_in_lanes(a, u);
    transpose_in_lanes(b, v);
    for (int j = 0; j < 4; ++j) {
      kt[j] = _mm512_shuffle_i32x4(u[j], v[j], 0x88);
      kt[j + 4] = _mm512_shuffle_i32x4(u[j], v[j], 0xDD);
    }
  }

 private:
  // Segment sg of two rows as 2 x 32 unsigned bytes.
  template <class EK>
  static I block_pair(typename EK::Row r0, typename EK::Row r1, int64_t sg) {
    if constexpr (std::is_same_v<EK, KvQ4_0>) {
      // [qs, qs] of each row, the second copy shifted down a nibble: elements 0-15, 16-31.
      const I x = _mm512_inserti64x4(_mm512_castsi256_si512(broadcast_16(r0.block[sg].qs)),
                                     broadcast_16(r1.block[sg].qs), 1);
      const I shifted = _mm512_srlv_epi64(x, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0));
      return _mm512_and_si512(shifted, _mm512_set1_epi8(15));
    } else {
      const I x = _mm512_inserti64x4(_mm512_castsi256_si512(load_32(r0.block[sg].qs)),
                                     load_32(r1.block[sg].qs), 1);
      return _mm512_xor_si512(x, _mm512_set1_epi8(static_cast<char>(0x80)));  // level + 128
    }
  }
  static __m256i load_32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static __m256i broadcast_16(const void* p) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
  // Within each 128-bit lane: out[j] dword r = in[r] dword j.
  static void transpose_in_lanes(const I* in, I* out) {
    const I t0 = _mm512_unpacklo_epi32(in[0], in[1]), t1 = _mm512_unpackhi_epi32(in[0], in[1]);
    const I t2 = _mm512_unpacklo_epi32(in[2], in[3]), t3 = _mm512_unpackhi_epi32(in[2], in[3]);
    out[0] = _mm512_unpacklo_epi64(t0, t2);
    out[1] = _mm512_unpackhi_epi64(t0, t2);
    out[2] = _mm512_unpacklo_epi64(t1, t3);
    out[3] = _mm512_unpackhi_epi64(t1, t3);
  }
};

}  // namespace
}  // namespace tally::cpu
