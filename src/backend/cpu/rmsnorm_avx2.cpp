#include "backend/cpu/simd_avx2.h"
#include "backend/cpu/rmsnorm_simd.h"
#include "backend/cpu/rmsnorm.h"

namespace tally::cpu::detail {

void rmsnorm_row_avx2(const float* x, const float* w, float* out, int64_t n, float eps) {
  rmsnorm_row_simd<Avx2>(x, w, out, n, eps);
}

}  // namespace tally::cpu::detail
