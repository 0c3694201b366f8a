// Element-wise ops of the forward pass: the SwiGLU / GeGLU gates, the residual / bias adds, and
// the scaling and tanh soft-capping of Gemma.
// Each output element depends only on the inputs at its own index.
#pragma once

#include <cstdint>

#include "base/cpu_features.h"
#include "base/thread_pool.h"

namespace tally::cpu {

// GeGLU's constants: 2 * sqrt(2 / pi) and the cubic coefficient of gelu_pytorch_tanh.
inline constexpr float kGeluTwoSqrt2OverPi = 1.5957691216057308f;
inline constexpr float kGeluCubic = 0.044715f;

// gate[i] = silu(gate[i]) * up[i], silu(g) = g * (1 / (1 + e^-g)) as in llama2.c's run.c.
// The SIMD paths use a polynomial e^x (within a few ulp of expf), so they differ from the
// scalar path in the last bits.
void silu_mul_row(IsaLevel isa, float* gate, const float* up, int64_t n);
// gate, up: [n_rows][n], in parallel over rows.
void silu_mul(float* gate, const float* up, int64_t n_rows, int64_t n, ThreadPool& pool);

// gate[i] = gelu_tanh(gate[i]) * up[i] (GeGLU, Gemma's gelu_pytorch_tanh), computed as
// g * sigmoid(2u), u = sqrt(2/pi) * (g + 0.044715 g^3), which is 0.5 g (1 + tanh(u)). The SIMD
// paths use the polynomial e^x, so they differ from the scalar path in the last bits.
void gelu_mul_row(IsaLevel isa, float* gate, const float* up, int64_t n);
void gelu_mul(float* gate, const float* up, int64_t n_rows, int64_t n, ThreadPool& pool);

// x[i] = cap * tanh(x[i] / cap), tanh(y) computed as 1 - 2 / (e^(2y) + 1) (cap > 0). The SIMD
// paths differ from the scalar path in the last bits, as for silu.
void softcap_row(IsaLevel isa, float* x, float cap, int64_t n);
void softcap(float* x, float cap, int64_t n, ThreadPool& pool);

// x[i] *= s: same bits on every path.
void scale_row(IsaLevel isa, float* x, float s, int64_t n);
void scale(float* x, float s, int64_t n, ThreadPool& pool);

// x[i] += y[i]: same bits on every path.
void add_row(IsaLevel isa, float* x, const float* y, int64_t n);
// x, y: [n] flat (e.g. a residual stream [n_tokens][n_embd]), split into fixed chunks.
void add(float* x, const float* y, int64_t n, ThreadPool& pool);
// x[r] += bias for every row: x: [n_rows][n], bias: [n].
void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n, ThreadPool& pool);
// acc[rows[i]] += weights[i] * y[i] (row i when rows is null), rows distinct: acc [*][n],
// y [n_rows][n]. One path for every ISA (this file is built for the baseline, so a product then
// an add, never fused), so the bits do not depend on the machine; MoE's per-token sums use it.
void add_rows_scaled(float* acc, const float* y, const int32_t* rows, const float* weights, int64_t n_rows,
                     int64_t n, ThreadPool& pool);

namespace detail {
void silu_mul_row_avx2(float* gate, const float* up, int64_t n);
void silu_mul_row_avx512(float* gate, const float* up, int64_t n);
void gelu_mul_row_avx2(float* gate, const float* up, int64_t n);
void gelu_mul_row_avx512(float* gate, const float* up, int64_t n);
void softcap_row_avx2(float* x, float cap, int64_t n);
void softcap_row_avx512(float* x, float cap, int64_t n);
void scale_row_avx2(float* x, float s, int64_t n);
void scale_row_avx512(float* x, float s, int64_t n);
void add_row_avx2(float* x, const float* y, int64_t n);
void add_row_avx512(float* x, const float* y, int64_t n);
}  // namespace detail

}  // namespace tally::cpu
