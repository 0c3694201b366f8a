#include "backend/cpu/elementwise.h"

#include <cmath>

#include "base/check.h"

namespace tally::cpu {

void silu_mul_row(IsaLevel isa, float* gate, const float* up, int64_t n) {
  TALLY_DCHECK(isa <= cpu_isa_level(), "ISA path {} not available", isa_level_name(isa));
  switch (isa) {
    case IsaLevel::kAvx512: return detail::silu_mul_row_avx512(gate, up, n);
    case IsaLevel::kAvx2: return detail::silu_mul_row_avx2(gate, up, n);
    case IsaLevel::kScalar:
      for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        gate[i] = g * (1.0f / (1.0f + std::exp(-g))) * up[i];
      }
      return;
  }
}

void silu_mul(float* gate, const float* up, int64_t n_rows, int64_t n, ThreadPool& pool) {
  if (n_rows == 0) return;
  const IsaLevel isa = cpu_isa_level();
  pool.parallel_for(n_rows, 1, [&](int64_t begin, int64_t end, int) {
    for (int64_t r = begin; r < end; ++r) silu_mul_row(isa, gate + r * n, up + r * n, n);
  });
}

void gelu_mul_row(IsaLevel isa, float* gate, const float* up, int64_t n) {
  TALLY_DCHECK(isa <= cpu_isa_level(), "ISA path {} not available", isa_level_name(isa));
  switch (isa) {
    case IsaLevel::kAvx512: return detail::gelu_mul_row_avx512(gate, up, n);
    case IsaLevel::kAvx2: return detail::gelu_mul_row_avx2(gate, up, n);
    case IsaLevel::kScalar:
      for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        const float two_u = kGeluTwoSqrt2OverPi * (g + kGeluCubic * g * g * g);
        gate[i] = g * (1.0f / (1.0f + std::exp(-two_u))) * up[i];
      }
      return;
  }
}

void gelu_mul(float* gate, const float* up, int64_t n_rows, int64_t n, ThreadPool& pool) {
  if (n_rows == 0) return;
  const IsaLevel isa = cpu_isa_level();
  pool.parallel_for(n_rows, 1, [&](int64_t begin, int64_t end, int) {
    for (int64_t r = begin; r < end; ++r) gelu_mul_row(isa, gate + r * n, up + r * n, n);
  });
}

void softcap_row(IsaLevel isa, float* x, float cap, int64_t n) {
  TALLY_DCHECK(isa <= cpu_isa_level(), "ISA path {} not available", isa_level_name(isa));
  switch (isa) {
    case IsaLevel::kAvx512: return detail::softcap_row_avx512(x, cap, n);
    case IsaLevel::kAvx2: return detail::softcap_row_avx2(x, cap, n);
    case IsaLevel::kScalar:
      for (int64_t i = 0; i < n; ++i) x[i] = cap * (1.0f - 2.0f / (std::exp(2.0f * (x[i] / cap)) + 1.0f));
      return;
  }
}

void scale_row(IsaLevel isa, float* x, float s, int64_t n) {
  TALLY_DCHECK(isa <= cpu_isa_level(), "ISA path {} not available", isa_level_name(isa));
  switch (isa) {
    case IsaLevel::kAvx512: return detail::scale_row_avx512(x, s, n);
    case IsaLevel::kAvx2: return detail::scale_row_avx2(x, s, n);
    case IsaLevel::kScalar:
      for (int64_t i = 0; i < n; ++i) x[i] *= s;
      return;
  }
}

namespace {

// Flat element-wise work in fixed chunks (the split cannot change an element's bits).
constexpr int64_t kElementwiseChunk = 16384;

}  // namespace

void softcap(float* x, float cap, int64_t n, ThreadPool& pool) {
  if (n == 0) return;
  const IsaLevel isa = cpu_isa_level();
  pool.parallel_for(n, kElementwiseChunk, [&](int64_t begin, int64_t end, int) {
    softcap_row(isa, x + begin, cap, end - begin);
  });
}

void scale(float* x, float s, int64_t n, ThreadPool& pool) {
  if (n == 0) return;
  const IsaLevel isa = cpu_isa_level();
  pool.parallel_for(n, kElementwiseChunk, [&](int64_t begin, int64_t end, int) {
    scale_row(isa, x + begin, s, end - begin);
  });
}

void add_row(IsaLevel isa, float* x, const float* y, int64_t n) {
  TALLY_DCHECK(isa <= cpu_isa_level(), "ISA path {} not available", isa_level_name(isa));
  switch (isa) {
    case IsaLevel::kAvx512: return detail::add_row_avx512(x, y, n);
    case IsaLevel::kAvx2: return detail::add_row_avx2(x, y, n);
    case IsaLevel::kScalar:
      for (int64_t i = 0; i < n; ++i) x[i] += y[i];
      return;
  }
}

void add(float* x, const float* y, int64_t n, ThreadPool& pool) {
  if (n == 0) return;
  const IsaLevel isa = cpu_isa_level();
  pool.parallel_for(n, kElementwiseChunk, [&](int64_t begin, int64_t end, int) {
    add_row(isa, x + begin, y + begin, end - begin);
  });
}

void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n, ThreadPool& pool) {
  if (n_rows == 0) return;
  const IsaLevel isa = cpu_isa_level();
  pool.parallel_for(n_rows, 8, [&](int64_t begin, int64_t end, int) {
    for (int64_t r = begin; r < end; ++r) add_row(isa, x + r * n, bias, n);
  });
}

void add_rows_scaled(float* acc, const float* y, const int32_t* rows, const float* weights, int64_t n_rows,
                     int64_t n, ThreadPool& pool) {
  if (n_rows == 0) return;
  pool.parallel_for(n_rows, 8, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) {
      float* out = acc + (rows ? rows[i] : i) * n;
      const float* in = y + i * n;
      const float w = weights[i];
      for (int64_t j = 0; j < n; ++j) out[j] += w * in[j];
    }
  });
}

}  // namespace tally::cpu
