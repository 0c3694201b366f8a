#include "backend/cpu/simd_avx2.h"
#include "backend/cpu/elementwise_simd.h"
#include "backend/cpu/elementwise.h"

namespace tally::cpu::detail {

void silu_mul_row_avx2(float* gate, const float* up, int64_t n) { silu_mul_row_simd<Avx2>(gate, up, n); }

void gelu_mul_row_avx2(float* gate, const float* up, int64_t n) { gelu_mul_row_simd<Avx2>(gate, up, n); }

void softcap_row_avx2(float* x, float cap, int64_t n) { softcap_row_simd<Avx2>(x, cap, n); }

void scale_row_avx2(float* x, float s, int64_t n) { scale_row_simd<Avx2>(x, s, n); }

void add_row_avx2(float* x, const float* y, int64_t n) { add_row_simd<Avx2>(x, y, n); }

}  // namespace tally::cpu::detail
