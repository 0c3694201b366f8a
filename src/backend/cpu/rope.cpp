#include "backend/cpu/rope.h"

#include <cmath>

#include "base/check.h"

namespace tally::cpu {

namespace {

void rope_head_scalar(const RopeShape& s, const float* cos, const float* sin, float* x) {
  if (s.layout == RopeLayout::kAdjacent) {
    for (int64_t j = 0; j < s.rot_dim; j += 2) {
      const float x0 = x[j];
      const float x1 = x[j + 1];
      x[j] = x0 * cos[j] + x1 * sin[j];
      x[j + 1] = x1 * cos[j + 1] + x0 * sin[j + 1];
    }
    return;
  }
  const int64_t half = s.rot_dim / 2;
  for (int64_t j = 0; j < half; ++j) {
    const float x0 = x[j];
    const float x1 = x[j + half];
    x[j] = x0 * cos[j] + x1 * sin[j];
    x[j + half] = x1 * cos[j + half] + x0 * sin[j + half];
  }
}

}  // namespace

void rope_table(const int32_t* positions, int64_t n_tokens, const float* freqs, int64_t rot_dim,
                RopeLayout layout, float* cos, float* sin) {
  const int64_t half = rot_dim / 2;
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* c = cos + t * rot_dim;
    float* s = sin + t * rot_dim;
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(positions[t]) * freqs[i];
      const float ci = std::cos(angle);
      const float si = std::sin(angle);
      // First element of the pair: x0*c - x1*s; second: x1*c + x0*s.
      const int64_t j0 = layout == RopeLayout::kAdjacent ? 2 * i : i;
      const int64_t j1 = layout == RopeLayout::kAdjacent ? 2 * i + 1 : i + half;
      c[j0] = ci;
      c[j1] = ci;
      s[j0] = -si;
      s[j1] = si;
    }
  }
}

void rope_row(IsaLevel isa, const RopeShape& shape, const float* cos, const float* sin, float* x) {
  TALLY_DCHECK(isa <= cpu_isa_level(), "ISA path {} not available", isa_level_name(isa));
  TALLY_DCHECK(shape.rot_dim % 2 == 0 && shape.rot_dim <= shape.head_dim, "bad rot_dim {}",
               shape.rot_dim);
  switch (isa) {
    case IsaLevel::kAvx512: return detail::rope_row_avx512(shape, cos, sin, x);
    case IsaLevel::kAvx2: return detail::rope_row_avx2(shape, cos, sin, x);
    case IsaLevel::kScalar:
      for (int64_t h = 0; h < shape.n_heads; ++h) rope_head_scalar(shape, cos, sin, x + h * shape.head_dim);
      return;
  }
}

void rope(const RopeShape& shape, const float* cos, const float* sin, int64_t n_tokens, float* x,
          ThreadPool& pool) {
  if (n_tokens == 0) return;
  const IsaLevel isa = cpu_isa_level();
  const int64_t row = shape.n_heads * shape.head_dim;
  pool.parallel_for(n_tokens, 8, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = begin; t < end; ++t)
      rope_row(isa, shape, cos + t * shape.rot_dim, sin + t * shape.rot_dim, x + t * row);
  });
}

}  // namespace tally::cpu
