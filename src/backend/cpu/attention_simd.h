// Inner loops of attention over a SIMD primitive set S with 16-bit loads (simd_half_*.h).
// Include only from *_avx2.cpp / *_avx512.cpp, after the primitive header.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backend/cpu/attention_impl.h"
#include "backend/cpu/simd_math.h"

namespace tally::cpu {
namespace {

template <class S>
struct SimdKernels {
  static constexpr int kW = S::kWidth;

  using V = typename S::V;

  // kW values of storage type E, widened to f32.
  template <class E>
  static V load_kv(const typename E::T* p) {
    if constexpr (std::is_same_v<E, KvF16>) {
      return S::load_f16(p);
    } else if constexpr (std::is_same_v<E, KvBF16>) {
      return S::load_bf16(p);
    } else {
      return S::load(p);
    }
  }
  // simd_dot's order (lanes with FMA, fixed-order lane sum, tail in index order) for any E.
  template <class E>
  static float dot(const float* a, const typename E::T* b, int64_t n) {
    int64_t i = 0;
    float sum = 0.0f;
    if (n >= kW) {
      V acc = S::zero();
      for (; i + kW <= n; i += kW) acc = S::fmadd(S::load(a + i), load_kv<E>(b + i), acc);
      sum = S::hsum(acc);
    }
    // Tails fuse explicitly (what contraction made of the f32 code anyway), so the bits cannot
    // depend on whether the compiler contracts the widened form too.
    for (; i < n; ++i) sum = __builtin_fmaf(a[i], E::to_f32(b[i]), sum);
    return sum;
  }
  template <class E>
  static void axpy(float* y, float w, const typename E::T* x, int64_t n) {
    const V vw = S::set1(w);
    int64_t i = 0;
    for (; i + kW <= n; i += kW) S::store(y + i, S::fmadd(vw, load_kv<E>(x + i), S::load(y + i)));
    for (; i < n; ++i) y[i] = __builtin_fmaf(w, E::to_f32(x[i]), y[i]);
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
