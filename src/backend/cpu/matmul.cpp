// PLACEHOLDER (f32 only, scalar): replaced by the SIMD kernels of the tensor/kernel work.
#include "backend/cpu/matmul.h"

#include "base/check.h"

namespace tally::cpu {

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  TALLY_CHECK(w.type == DType::kF32, "placeholder matmul handles f32 only");
  pool.parallel_for(w.n_out, 16, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* xt = x + t * w.n_in;
      for (int64_t o = begin; o < end; ++o) {
        const float* row = reinterpret_cast<const float*>(w.data + o * w.row_bytes);
        float acc = 0.0f;
        for (int64_t k = 0; k < w.n_in; ++k) acc += row[k] * xt[k];
        y[t * w.n_out + o] = acc;
      }
    }
  });
}

void matmul_reference(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) {
  TALLY_CHECK(w.type == DType::kF32, "placeholder matmul handles f32 only");
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t o = 0; o < w.n_out; ++o) {
      const float* row = reinterpret_cast<const float*>(w.data + o * w.row_bytes);
      double acc = 0.0;
      for (int64_t k = 0; k < w.n_in; ++k) acc += double(row[k]) * x[t * w.n_in + k];
      y[t * w.n_out + o] = float(acc);
    }
}

}  // namespace tally::cpu
