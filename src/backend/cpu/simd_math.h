// Math over a SIMD primitive set S (Avx2 or Avx512 from simd_avx2.h / simd_avx512.h). Include
// only from *_avx2.cpp / *_avx512.cpp files, after the primitive header: internal linkage.
#pragma once

#include <cstdint>

namespace tally::cpu {
namespace {

// e^x, within ~2 ulp of expf on [-87.3, 88.3]; 0 below, +inf above (as expf rounds there).
// x = n*ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2), e^r by its Taylor series to
// degree 7 (truncation error < 1e-8 relative), then scaled by 2^n.
template <class S>
typename S::V simd_exp(typename S::V x) {
  using V = typename S::V;
  const V lo = S::set1(-87.3f);
  const V hi = S::set1(88.3f);
  const V xc = S::min(S::max(x, lo), hi);
  const V n = S::round_nearest(S::mul(xc, S::set1(1.44269504088896341f)));
  V r = S::fnmadd(n, S::set1(0.693359375f), xc);
  r = S::fnmadd(n, S::set1(-2.12194440e-4f), r);
  V p = S::set1(1.0f / 5040.0f);
  p = S::fmadd(p, r, S::set1(1.0f / 720.0f));
  p = S::fmadd(p, r, S::set1(1.0f / 120.0f));
  p = S::fmadd(p, r, S::set1(1.0f / 24.0f));
  p = S::fmadd(p, r, S::set1(1.0f / 6.0f));
  p = S::fmadd(p, r, S::set1(0.5f));
  p = S::fmadd(p, r, S::set1(1.0f));
  p = S::fmadd(p, r, S::set1(1.0f));
  V out = S::mul(p, S::pow2i(n));
  out = S::select_lt(x, lo, S::zero(), out);
  return S::select_gt(x, hi, S::set1(__builtin_inff()), out);
}

// sum_i a[i]*b[i]: lanes accumulate with FMA, then a fixed-order lane sum, then the tail in
// index order. The order depends only on n.
template <class S>
float simd_dot(const float* a, const float* b, int64_t n) {
  constexpr int kW = S::kWidth;
  int64_t i = 0;
  float sum = 0.0f;
  if (n >= kW) {
    typename S::V acc = S::zero();
    for (; i + kW <= n; i += kW) acc = S::fmadd(S::load(a + i), S::load(b + i), acc);
    sum = S::hsum(acc);
  }
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace
}  // namespace tally::cpu
