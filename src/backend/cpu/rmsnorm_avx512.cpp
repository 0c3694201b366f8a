#include "backend/cpu/simd_avx512.h"
#include "backend/cpu/rmsnorm_simd.h"
#include "backend/cpu/rmsnorm.h"

namespace tally::cpu::detail {

void rmsnorm_row_avx512(const float* x, const float* w, float* out, int64_t n, float eps) {
  rmsnorm_row_simd<Avx512>(x, w, out, n, eps);
}

}  // namespace tally::cpu::detail
