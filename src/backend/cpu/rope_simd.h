// rope over a SIMD primitive set S. Include only from *_avx2.cpp / *_avx512.cpp.
// Products are kept apart from the add (S::opaque) so every path rounds like the scalar one.
#pragma once

#include <cstdint>

#include "backend/cpu/rope.h"

namespace tally::cpu {
namespace {

// Scalar tails: the same barrier, or -mfma would fuse them.
inline float rope_scalar_rotate(float x, float partner, float c, float s) {
  float a = x * c;
  float b = partner * s;
  __asm__("" : "+x"(a), "+x"(b));
  return a + b;
}

template <class S>
typename S::V rope_rotate(typename S::V x, typename S::V partner, typename S::V c,
                          typename S::V s) {
  return S::add(S::opaque(S::mul(x, c)), S::opaque(S::mul(partner, s)));
}

template <class S>
void rope_head_adjacent(int64_t rot_dim, const float* cos, const float* sin, float* x) {
  constexpr int kW = S::kWidth;  // even: vectors hold whole pairs
  int64_t j = 0;
  for (; j + kW <= rot_dim; j += kW) {
    const typename S::V v = S::load(x + j);
    S::store(x + j, rope_rotate<S>(v, S::swap_pairs(v), S::load(cos + j), S::load(sin + j)));
  }
  for (; j < rot_dim; j += 2) {
    const float x0 = x[j];
    const float x1 = x[j + 1];
    x[j] = rope_scalar_rotate(x0, x1, cos[j], sin[j]);
    x[j + 1] = rope_scalar_rotate(x1, x0, cos[j + 1], sin[j + 1]);
  }
}

template <class S>
void rope_head_neox(int64_t rot_dim, const float* cos, const float* sin, float* x) {
  constexpr int kW = S::kWidth;
  const int64_t half = rot_dim / 2;
  int64_t j = 0;
  for (; j + kW <= half; j += kW) {
    const typename S::V lo = S::load(x + j);
    const typename S::V hi = S::load(x + j + half);
    S::store(x + j, rope_rotate<S>(lo, hi, S::load(cos + j), S::load(sin + j)));
    S::store(x + j + half, rope_rotate<S>(hi, lo, S::load(cos + j + half), S::load(sin + j + half)));
  }
  for (; j < half; ++j) {
    const float x0 = x[j];
    const float x1 = x[j + half];
    x[j] = rope_scalar_rotate(x0, x1, cos[j], sin[j]);
    x[j + half] = rope_scalar_rotate(x1, x0, cos[j + half], sin[j + half]);
  }
}

template <class S>
void rope_row_simd(const RopeShape& shape, const float* cos, const float* sin, float* x) {
  for (int64_t h = 0; h < shape.n_heads; ++h) {
    float* xh = x + h * shape.head_dim;
    if (shape.layout == RopeLayout::kAdjacent)
      rope_head_adjacent<S>(shape.rot_dim, cos, sin, xh);
    else
      rope_head_neox<S>(shape.rot_dim, cos, sin, xh);
  }
}

}  // namespace
}  // namespace tally::cpu
