// Element-wise ops of the forward pass: the SwiGLU gate and the residual / bias adds.
// Each output element depends only on the inputs at its own index.
#pragma once

#include <cstdint>

#include "base/cpu_features.h"
#include "base/thread_pool.h"

namespace tally::cpu {

// gate[i] = silu(gate[i]) * up[i], silu(g) = g * (1 / (1 + e^-g)) as in llama2.c's run.c.
// The SIMD paths use a polynomial e^x (within a few ulp of expf), so they differ from the
// scalar path in the last bits.
void silu_mul_row(IsaLevel isa, float* gate, const float* up, int64_t n);
// gate, up: [n_rows][n], in parallel over rows.
void silu_mul(float* gate, const float* up, int64_t n_rows, int64_t n, ThreadPool& pool);

// x[i] += y[i]: same bits on every path.
void add_row(IsaLevel isa, float* x, const float* y, int64_t n);
// x, y: [n] flat (e.g. a residual stream [n_tokens][n_embd]), split into fixed chunks.
void add(float* x, const float* y, int64_t n, ThreadPool& pool);
// x[r] += bias for every row: x: [n_rows][n], bias: [n].
void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n, ThreadPool& pool);

namespace detail {
void silu_mul_row_avx2(float* gate, const float* up, int64_t n);
void silu_mul_row_avx512(float* gate, const float* up, int64_t n);
void add_row_avx2(float* x, const float* y, int64_t n);
void add_row_avx512(float* x, const float* y, int64_t n);
}  // namespace detail

}  // namespace tally::cpu
