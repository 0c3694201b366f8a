// RMS normalization of rows: out = w * (x * 1/sqrt(mean(x^2) + eps)), as llama2.c's run.c
// computes it. The sum of squares runs in an order fixed by the row length alone (per ISA
// path), so a row's result never depends on which or how many other rows are normalized.
#pragma once

#include <cstdint>

#include "base/cpu_features.h"
#include "base/thread_pool.h"

namespace tally::cpu {

// One row of n elements through the given ISA path (which the CPU must have).
// x, w, out: [n]; out may alias x.
void rmsnorm_row(IsaLevel isa, const float* x, const float* w, float* out, int64_t n, float eps);

// Rows in parallel with the CPU's best path. x, out: [n_rows][n] (out may alias x); w: [n].
void rmsnorm(const float* x, const float* w, float* out, int64_t n_rows, int64_t n, float eps,
             ThreadPool& pool);

namespace detail {
void rmsnorm_row_avx2(const float* x, const float* w, float* out, int64_t n, float eps);
void rmsnorm_row_avx512(const float* x, const float* w, float* out, int64_t n, float eps);
}  // namespace detail

}  // namespace tally::cpu
