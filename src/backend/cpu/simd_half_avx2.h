// 16-bit float loads and stores for the AVX2 primitive set (and the int8 / 4-bit loads of
// q8_0 / q4_0 KV blocks): 8 f16 or bf16 values widened to
// f32 lanes (exact), or f32 lanes narrowed with round to nearest, ties to even, giving the bits
// of tensor/half.h's scalar conversions (NaNs included). Include only from *_avx2.cpp files.
#pragma once

#include "backend/cpu/simd_avx2.h"

namespace tally::cpu {
namespace {

struct Avx2Half : Avx2 {
  // 8 int8 values as f32 (exact).
  static V load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(load_8_bytes(p)));
  }
  // q - 8 of the low (high) nibbles of 8 bytes, as f32: q4_0's levels.
  static V load_q4_low(const uint8_t* p) { return q4_levels(_mm256_cvtepu8_epi32(load_8_bytes(p))); }
  static V load_q4_high(const uint8_t* p) {
    return q4_levels(_mm256_srli_epi32(_mm256_cvtepu8_epi32(load_8_bytes(p)), 4));
  }
  // An f16 scale in every lane (exact).
  static V set1_f16(uint16_t h) { return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(h))); }
  static V load_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static V load_bf16(const uint16_t* p) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static void store_f16(uint16_t* p, V v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static void store_bf16(uint16_t* p, V v) {
    const __m256i b = _mm256_castps_si256(v);
    const __m256i high = _mm256_srli_epi32(b, 16);
    // Round to nearest even: add 0x7fff plus the lowest kept bit, keep the top 16 bits.
    const __m256i bias =
        _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(high, _mm256_set1_epi32(1)));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(b, bias), 16);
    // NaNs are truncated with the quiet bit forced (rounding could carry them into infinity).
    const __m256i abs = _mm256_and_si256(b, _mm256_set1_epi32(0x7fffffff));
    const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
    const __m256i quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
    const __m256i bits = _mm256_blendv_epi8(rounded, quiet, nan);
    // Every lane is < 2^16, so the unsigned saturating pack is exact; it packs within 128-bit
    // halves, so gather quadwords 0 and 2.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
  }

 private:
  static __m128i load_8_bytes(const void* p) {
    return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  }
  static V q4_levels(__m256i q) {
    const __m256i low = _mm256_and_si256(q, _mm256_set1_epi32(15));
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(low, _mm256_set1_epi32(8)));
  }
};

}  // namespace
}  // namespace tally::cpu
