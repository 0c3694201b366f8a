// Matrix products of a weight matrix (any computable dtype, in the GGUF layout) with f32
// activations: the bulk of every forward pass.
//
//   y[t][o] = sum_k W[o][k] * x[t][k]      W: [n_out][n_in]  x: [n_tokens][n_in]  y: [n_tokens][n_out]
//
// Promise (batch invariance): y[t][o] depends only on W[o] and x[t], bit for bit — not on
// n_tokens, the other rows of x, the thread count or the ISA path chosen for the *other*
// rows. Work is split over output rows only; each dot product reduces in one fixed order.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "tensor/dtype.h"

namespace tally::cpu {

// A row-major weight matrix viewed in place (e.g. in the mmap): row o holds n_in elements
// of `type` starting at data + o * row_bytes.
struct WeightMatrix {
  DType type = DType::kF32;
  int64_t n_in = 0;
  int64_t n_out = 0;
  const uint8_t* data = nullptr;
  int64_t row_bytes = 0;
};

// y = x · Wᵀ over the pool. x: [n_tokens][n_in], y: [n_tokens][n_out] (contiguous).
void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

// Scalar reference (dequantize row, then dot in double): what the fast paths are tested
// against. Single-threaded, slow, for tests only.
void matmul_reference(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y);

}  // namespace tally::cpu
