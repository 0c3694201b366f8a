// Inner loops of attention over a SIMD primitive set S. Include only from *_avx2.cpp /
// *_avx512.cpp, after the primitive header.
#pragma once

#include <cstdint>

#include "backend/cpu/attention_impl.h"
#include "backend/cpu/simd_math.h"

namespace tally::cpu {
namespace {

template <class S>
struct SimdKernels {
  static constexpr int kW = S::kWidth;

  static float dot(const float* a, const float* b, int64_t n) { return simd_dot<S>(a, b, n); }
  static void axpy(float* y, float w, const float* x, int64_t n) {
    const typename S::V vw = S::set1(w);
    int64_t i = 0;
    for (; i + kW <= n; i += kW) S::store(y + i, S::fmadd(vw, S::load(x + i), S::load(y + i)));
    for (; i < n; ++i) y[i] += w * x[i];
  }
  static void scale(float* y, float a, int64_t n) {
    const typename S::V va = S::set1(a);
    int64_t i = 0;
    for (; i + kW <= n; i += kW) S::store(y + i, S::mul(va, S::load(y + i)));
    for (; i < n; ++i) y[i] *= a;
  }
  static void exp_inplace(float* s, int64_t n) {
    int64_t i = 0;
    for (; i + kW <= n; i += kW) S::store(s + i, simd_exp<S>(S::load(s + i)));
    if (i == n) return;
    float tail[kW] = {};
    for (int64_t k = 0; k < n - i; ++k) tail[k] = s[i + k];
    S::store(tail, simd_exp<S>(S::load(tail)));
    for (int64_t k = 0; k < n - i; ++k) s[i + k] = tail[k];
  }
};

}  // namespace
}  // namespace tally::cpu
