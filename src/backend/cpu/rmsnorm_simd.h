// rmsnorm over a SIMD primitive set S. Include only from *_avx2.cpp / *_avx512.cpp. Only
// builtins and internal-linkage code here: an inline library function (std::sqrt) compiled with
// AVX-512 flags could be the copy the linker keeps for baseline callers.
#pragma once

#include <cstdint>

#include "backend/cpu/simd_math.h"

namespace tally::cpu {
namespace {

template <class S>
void rmsnorm_row_simd(const float* x, const float* w, float* out, int64_t n, float eps) {
  constexpr int kW = S::kWidth;
  const float ss = simd_dot<S>(x, x, n);
  const float scale = 1.0f / __builtin_sqrtf(ss / static_cast<float>(n) + eps);
  const typename S::V vs = S::set1(scale);
  int64_t i = 0;
  for (; i + kW <= n; i += kW) S::store(out + i, S::mul(S::load(w + i), S::mul(vs, S::load(x + i))));
  for (; i < n; ++i) out[i] = w[i] * (scale * x[i]);
}

}  // namespace
}  // namespace tally::cpu
