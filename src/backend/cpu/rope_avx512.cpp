#include "backend/cpu/simd_avx512.h"
#include "backend/cpu/rope_simd.h"

namespace tally::cpu::detail {

void rope_row_avx512(const RopeShape& shape, const float* cos, const float* sin, float* x) {
  rope_row_simd<Avx512>(shape, cos, sin, x);
}

}  // namespace tally::cpu::detail
