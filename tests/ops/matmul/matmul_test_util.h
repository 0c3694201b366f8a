// Random weight matrices of any computable type and activations, the error bound a matmul
// result must meet against matmul_reference, and the bit-identity checks every path must pass.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_kernels.h"
#include "tensor/quantize.h"

namespace tally::cpu::test {

// A weight matrix that owns its bytes; rows may be padded past their data (row_bytes).
struct OwnedWeights {
  std::vector<uint8_t> bytes;
  std::vector<float> values;  // [n_out][n_in] the floats that were quantized
  WeightMatrix view;
};

inline OwnedWeights make_weights(DType type, int64_t n_out, int64_t n_in, uint32_t seed,
                                 int64_t pad_bytes = 0) {
  OwnedWeights w;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  w.values.resize(n_out * n_in);
  for (auto& v : w.values) v = normal(rng) * 0.1f;
  const int64_t row_bytes = dtype_row_bytes(type, n_in) + pad_bytes;
  w.bytes.assign(n_out * row_bytes + 64, 0xA5);  // padding bytes hold garbage on purpose
  for (int64_t o = 0; o < n_out; ++o)
    quantize_row(type, w.values.data() + o * n_in, w.bytes.data() + o * row_bytes, n_in);
  w.view = WeightMatrix{type, n_in, n_out, w.bytes.data(), row_bytes};
  return w;
}

// Activations with per-block character: varied scales and the odd outlier, so activation
// quantization has to cope with uneven blocks.
inline std::vector<float> make_acts(int64_t n_tokens, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n_tokens * n_in);
  for (int64_t i = 0; i < n_tokens * n_in; ++i) {
    float v = normal(rng);
    if (rng() % 64 == 0) v *= 30.0f;
    x[i] = v * std::ldexp(1.0f, static_cast<int>((i / 32) % 5) - 2);
  }
  return x;
}

// Activation block a weight type's kernels quantize x with (0: x stays f32).
inline int64_t act_block(DType type) {
  switch (detail::act_form(type)) {
    case detail::ActForm::kBlock32:
      return detail::kActBlock;
    case detail::ActForm::kBlockK:
      return detail::kActBlockK;
    case detail::ActForm::kFloat:
      break;
  }
  return 0;
}

// |y - reference| may be at most: the activation quantization error (each x is rounded to a
// multiple of d = amax(block)/127, so off by <= d/2, times |w|) plus f32 rounding of the sums
// (n_in * 2^-24 relative to sum |w x|, a loose bound for any summation order).
inline std::vector<double> error_bounds(const WeightMatrix& w, const float* x, int64_t n_tokens) {
  std::vector<float> row(w.n_in);
  std::vector<double> bounds(n_tokens * w.n_out);
  const int64_t blk = act_block(w.type);
  for (int64_t o = 0; o < w.n_out; ++o) {
    dequantize_row(w.type, w.data + o * w.row_bytes, row.data(), w.n_in);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* xt = x + t * w.n_in;
      double quant = 0.0, mag = 0.0;
      for (int64_t b = 0; b < w.n_in; b += (blk ? blk : w.n_in)) {
        const int64_t end = blk ? b + blk : w.n_in;
        double amax = 0.0;
        for (int64_t k = b; k < end; ++k) amax = std::max(amax, std::fabs(double(xt[k])));
        const double dx = blk ? amax / 127.0 * 0.5 * (1 + 1e-6) : 0.0;
        for (int64_t k = b; k < end; ++k) {
          quant += std::fabs(double(row[k])) * dx;
          mag += std::fabs(double(row[k])) * (std::fabs(double(xt[k])) + dx);
        }
      }
      bounds[t * w.n_out + o] = quant + mag * (double(w.n_in) + 4) * std::ldexp(1.0, -24) + 1e-30;
    }
  }
  return bounds;
}

// x as the quantized kernels see it: each row quantized per block (the kernels' own
// act_quantize_*), then multiplied back out. A reference product on these values differs
// from the kernels only by f32 rounding, so it checks the kernel arithmetic tightly.
inline std::vector<float> dequantized_acts(DType type, const std::vector<float>& x, int64_t n_in) {
  const int64_t blk = act_block(type);
  if (blk == 0) return x;
  const int64_t n_tokens = static_cast<int64_t>(x.size()) / n_in;
  std::vector<int8_t> q(n_in);
  std::vector<float> d(n_in / 32), out(x.size());
  std::vector<int16_t> sums(n_in / 16);
  for (int64_t t = 0; t < n_tokens; ++t) {
    if (blk == 32) {
      detail::act_quantize_row32(x.data() + t * n_in, n_in, q.data(), d.data(), sums.data());
    } else {
      detail::act_quantize_row_k(x.data() + t * n_in, n_in, q.data(), d.data(), sums.data());
    }
    for (int64_t k = 0; k < n_in; ++k) out[t * n_in + k] = float(q[k]) * d[k / blk];
  }
  return out;
}

// Bound for the comparison against the reference on dequantized_acts: f32 rounding only.
inline std::vector<double> rounding_bounds(const WeightMatrix& w, const float* xq,
                                           int64_t n_tokens) {
  std::vector<float> row(w.n_in);
  std::vector<double> bounds(n_tokens * w.n_out);
  for (int64_t o = 0; o < w.n_out; ++o) {
    dequantize_row(w.type, w.data + o * w.row_bytes, row.data(), w.n_in);
    for (int64_t t = 0; t < n_tokens; ++t) {
      double mag = 0.0;
      for (int64_t k = 0; k < w.n_in; ++k) mag += std::fabs(double(row[k]) * xq[t * w.n_in + k]);
      bounds[t * w.n_out + o] = mag * (double(w.n_in) + 4) * std::ldexp(1.0, -24) + 1e-30;
    }
  }
  return bounds;
}

// y of every ISA path this CPU has against the scalar path's, bit for bit.
inline void expect_paths_equal_scalar(const WeightMatrix& w, const std::vector<float>& x,
                                      int64_t n_tokens, ThreadPool& pool,
                                      const std::string& what) {
  std::vector<float> scalar(n_tokens * w.n_out, NAN);
  ASSERT_TRUE(matmul_with_isa(IsaLevel::kScalar, w, x.data(), n_tokens, scalar.data(), pool));
  for (const std::string& path : matmul_path_names()) {
    std::vector<float> y(n_tokens * w.n_out, NAN);
    ASSERT_TRUE(matmul_with_path(path, w, x.data(), n_tokens, y.data(), pool));
    EXPECT_EQ(0, std::memcmp(y.data(), scalar.data(), y.size() * sizeof(float)))
        << what << " on " << path;
  }
}

// On every path this CPU has: each of the 27 tokens of x gives the same bits alone (one
// token: decode's kernels), in the whole batch (many: the GEMMs) and in chunks of 9 + 12 + 6
// tokens as a prefill would be cut, at 1, 2 and 3 threads.
inline void expect_token_results_independent(const WeightMatrix& w, const std::vector<float>& x,
                                             const std::string& what) {
  const int64_t n_in = w.n_in, n_out = w.n_out, n_tokens = 27;
  ASSERT_EQ(static_cast<int64_t>(x.size()), n_tokens * n_in);
  ThreadPool one(1);
  for (const std::string& path : matmul_path_names()) {
    const std::string on = what + " on " + path;
    std::vector<float> alone(n_tokens * n_out);
    for (int64_t t = 0; t < n_tokens; ++t)
      matmul_with_path(path, w, x.data() + t * n_in, 1, alone.data() + t * n_out, one);
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      std::vector<float> batched(n_tokens * n_out);
      matmul_with_path(path, w, x.data(), n_tokens, batched.data(), pool);
      EXPECT_EQ(0, std::memcmp(batched.data(), alone.data(), batched.size() * sizeof(float)))
          << on << " whole batch, threads=" << threads;
      std::vector<float> chunked(n_tokens * n_out);
      for (const auto& [t0, n] : {std::pair<int64_t, int64_t>{0, 9}, {9, 12}, {21, 6}})
        matmul_with_path(path, w, x.data() + t0 * n_in, n, chunked.data() + t0 * n_out, pool);
      EXPECT_EQ(0, std::memcmp(chunked.data(), alone.data(), chunked.size() * sizeof(float)))
          << on << " chunked, threads=" << threads;
    }
  }
}

}  // namespace tally::cpu::test
