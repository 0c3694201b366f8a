// Element-wise ops over a SIMD primitive set S. Include only from *_avx2.cpp / *_avx512.cpp.
#pragma once

#include <cstdint>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/simd_math.h"

namespace tally::cpu {
namespace {

template <class S>
typename S::V silu_mul_vec(typename S::V g, typename S::V u) {
  const typename S::V one = S::set1(1.0f);
  const typename S::V sig = S::div(one, S::add(one, simd_exp<S>(S::sub(S::zero(), g))));
  return S::mul(S::mul(g, sig), u);
}

// g * sigmoid(2u), u = sqrt(2/pi) (g + 0.044715 g^3): gelu_tanh(g) * up.
template <class S>
typename S::V gelu_mul_vec(typename S::V g, typename S::V u) {
  const typename S::V one = S::set1(1.0f);
  const typename S::V g3 = S::mul(S::mul(g, g), g);
  const typename S::V inner = S::fmadd(S::set1(kGeluCubic), g3, g);
  const typename S::V two_u = S::mul(S::set1(kGeluTwoSqrt2OverPi), inner);
  const typename S::V sig = S::div(one, S::add(one, simd_exp<S>(S::sub(S::zero(), two_u))));
  return S::mul(S::mul(g, sig), u);
}

// gate = Op(gate, up) over a row; the tail goes through the same vector code via a padded
// copy (same math for every element).
template <class S, typename S::V (*Op)(typename S::V, typename S::V)>
void gated_row_simd(float* gate, const float* up, int64_t n) {
  constexpr int kW = S::kWidth;
  int64_t i = 0;
  for (; i + kW <= n; i += kW) S::store(gate + i, Op(S::load(gate + i), S::load(up + i)));
  if (i == n) return;
  float g[kW] = {};
  float u[kW] = {};
  for (int64_t k = 0; k < n - i; ++k) {
    g[k] = gate[i + k];
    u[k] = up[i + k];
  }
  S::store(g, Op(S::load(g), S::load(u)));
  for (int64_t k = 0; k < n - i; ++k) gate[i + k] = g[k];
}

template <class S>
void silu_mul_row_simd(float* gate, const float* up, int64_t n) {
  gated_row_simd<S, silu_mul_vec<S>>(gate, up, n);
}

template <class S>
void gelu_mul_row_simd(float* gate, const float* up, int64_t n) {
  gated_row_simd<S, gelu_mul_vec<S>>(gate, up, n);
}

// cap * (1 - 2 / (e^(2 x / cap) + 1)); the tail through a padded copy as above.
template <class S>
void softcap_row_simd(float* x, float cap, int64_t n) {
  constexpr int kW = S::kWidth;
  const typename S::V vcap = S::set1(cap);
  const typename S::V one = S::set1(1.0f);
  const typename S::V two = S::set1(2.0f);
  const auto op = [&](typename S::V v) {
    const typename S::V e = simd_exp<S>(S::mul(two, S::div(v, vcap)));
    return S::mul(vcap, S::sub(one, S::div(two, S::add(e, one))));
  };
  int64_t i = 0;
  for (; i + kW <= n; i += kW) S::store(x + i, op(S::load(x + i)));
  if (i == n) return;
  float t[kW] = {};
  for (int64_t k = 0; k < n - i; ++k) t[k] = x[i + k];
  S::store(t, op(S::load(t)));
  for (int64_t k = 0; k < n - i; ++k) x[i + k] = t[k];
}

template <class S>
void scale_row_simd(float* x, float s, int64_t n) {
  constexpr int kW = S::kWidth;
  const typename S::V vs = S::set1(s);
  int64_t i = 0;
  for (; i + kW <= n; i += kW) S::store(x + i, S::mul(S::load(x + i), vs));
  for (; i < n; ++i) x[i] *= s;
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
