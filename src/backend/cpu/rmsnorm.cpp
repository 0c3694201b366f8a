#include "backend/cpu/rmsnorm.h"

#include <cmath>

#include "base/check.h"

namespace tally::cpu {

namespace {

// The scalar path, also the reference: a sequential sum, then run.c's expression order.
void rmsnorm_row_scalar(const float* x, const float* w, float* out, int64_t n, float eps) {
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = w[i] * (scale * x[i]);
}

}  // namespace

void rmsnorm_row(IsaLevel isa, const float* x, const float* w, float* out, int64_t n, float eps) {
  TALLY_DCHECK(isa <= cpu_isa_level(), "ISA path {} not available", isa_level_name(isa));
  switch (isa) {
    case IsaLevel::kAvx512: return detail::rmsnorm_row_avx512(x, w, out, n, eps);
    case IsaLevel::kAvx2: return detail::rmsnorm_row_avx2(x, w, out, n, eps);
    case IsaLevel::kScalar: return rmsnorm_row_scalar(x, w, out, n, eps);
  }
}

void rmsnorm(const float* x, const float* w, float* out, int64_t n_rows, int64_t n, float eps,
             ThreadPool& pool) {
  const IsaLevel isa = cpu_isa_level();
  // Rows are independent: any split over rows gives the same bits.
  const int64_t grain = n_rows <= 4 ? n_rows : 4;
  if (n_rows == 0) return;
  pool.parallel_for(n_rows, grain, [&](int64_t begin, int64_t end, int) {
    for (int64_t r = begin; r < end; ++r) rmsnorm_row(isa, x + r * n, w, out + r * n, n, eps);
  });
}

}  // namespace tally::cpu
