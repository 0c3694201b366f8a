// Element-wise ops over a SIMD primitive set S. Include only from *_avx2.cpp / *_avx512.cpp.
#pragma once

#include <cstdint>

#include "backend/cpu/simd_math.h"

namespace tally::cpu {
namespace {

template <class S>
typename S::V silu_mul_vec(typename S::V g, typename S::V u) {
  const typename S::V one = S::set1(1.0f);
  const typename S::V sig = S::div(one, S::add(one, simd_exp<S>(S::sub(S::zero(), g))));
  return S::mul(S::mul(g, sig), u);
}

template <class S>
void silu_mul_row_simd(float* gate, const float* up, int64_t n) {
  constexpr int kW = S::kWidth;
  int64_t i = 0;
  for (; i + kW <= n; i += kW) S::store(gate + i, silu_mul_vec<S>(S::load(gate + i), S::load(up + i)));
  if (i == n) return;
  // The tail goes through the same vector code via a padded copy (same math for every element).
  float g[kW] = {};
  float u[kW] = {};
  for (int64_t k = 0; k < n - i; ++k) {
    g[k] = gate[i + k];
    u[k] = up[i + k];
  }
  S::store(g, silu_mul_vec<S>(S::load(g), S::load(u)));
  for (int64_t k = 0; k < n - i; ++k) gate[i + k] = g[k];
}

template <class S>
void add_row_simd(float* x, const float* y, int64_t n) {
  constexpr int kW = S::kWidth;
  int64_t i = 0;
  for (; i + kW <= n; i += kW) S::store(x + i, S::add(S::load(x + i), S::load(y + i)));
  for (; i < n; ++i) x[i] += y[i];
}

}  // namespace
}  // namespace tally::cpu
