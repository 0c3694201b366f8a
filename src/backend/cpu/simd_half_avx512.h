// 16-bit float loads and stores for the AVX-512 primitive set (and the int8 / 4-bit loads of
// q8_0 / q4_0 KV blocks): 16 f16 or bf16 values widened
// to f32 lanes (exact), or f32 lanes narrowed with round to nearest, ties to even, giving the
// bits of tensor/half.h's scalar conversions (NaNs included). Only AVX-512F instructions (the
// BF16 extension's converter flushes subnormals, so bf16 rounds in integer lanes as on AVX2).
// Include only from *_avx512.cpp files.
#pragma once

#include "backend/cpu/simd_avx512.h"

namespace tally::cpu {
namespace {

struct Avx512Half : Avx512 {
  // 16 int8 values as f32 (exact).
  static V load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  // q - 8 of the low (high) nibbles of 16 bytes, as f32: q4_0's levels.
  static V load_q4_low(const uint8_t* p) { return q4_levels(_mm512_cvtepu8_epi32(load_16_bytes(p))); }
  static V load_q4_high(const uint8_t* p) {
    return q4_levels(_mm512_srli_epi32(_mm512_cvtepu8_epi32(load_16_bytes(p)), 4));
  }
  // An f16 scale in every lane (exact).
  static V set1_f16(uint16_t h) { return _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(h))); }
  static V load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static V load_bf16(const uint16_t* p) {
    const __m512i wide =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
  static void store_f16(uint16_t* p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static void store_bf16(uint16_t* p, V v) {
    const __m512i b = _mm512_castps_si512(v);
    const __m512i high = _mm512_srli_epi32(b, 16);
    // Round to nearest even: add 0x7fff plus the lowest kept bit, keep the top 16 bits.
    const __m512i bias =
        _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(high, _mm512_set1_epi32(1)));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(b, bias), 16);
    // NaNs are truncated with the quiet bit forced (rounding could carry them into infinity).
    const __m512i abs = _mm512_and_si512(b, _mm512_set1_epi32(0x7fffffff));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7f800000));
    const __m512i bits = _mm512_mask_or_epi32(rounded, nan, high, _mm512_set1_epi32(0x40));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(bits));
  }

 private:
  static __m128i load_16_bytes(const uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  static V q4_levels(__m512i q) {
    const __m512i low = _mm512_and_si512(q, _mm512_set1_epi32(15));
    return _mm512_cvtepi32_ps(_mm512_sub_epi32(low, _mm512_set1_epi32(8)));
  }
};

}  // namespace
}  // namespace tally::cpu
