#include "backend/cpu/simd_half_avx512.h"  // first: the primitive set (and, for AVX-512, its pragmas)

#include "backend/cpu/kv_row.h"
#include "backend/cpu/kv_row_simd.h"

namespace tally::cpu::detail {

void kv_row_store_avx512(DType type, const float* src, void* dst, int64_t n) {
  kv_row_store_simd<Avx512Half>(type, src, dst, n);
}

}  // namespace tally::cpu::detail
