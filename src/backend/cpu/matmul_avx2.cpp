// TEMPORARY: SIMD kernels being written; the scalar table stands in.
#include "backend/cpu/matmul_kernels.h"

namespace tally::cpu::detail {
const MatmulKernels& matmul_kernels_avx2() { return matmul_kernels_scalar(); }
}  // namespace tally::cpu::detail
