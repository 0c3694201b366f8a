// The matmul kernel's peak rate for one weight type, measured on this machine in the same run
// as the benchmarks it bounds: a weight panel small enough to stay in the caches (rows_per_thread
// rows of n_in per thread) against n_tokens activation rows, through cpu::matmul_repeat (the
// inner loop with activations quantized once, no barrier between repeats), in the layout a
// loaded model uses (Q8_0 / Q4_0 repacked, matmul_repack.h). Prefill is
// matmul-bound, so prefill tokens/s <= peak FLOP/s / matmul FLOPs per token.
//
// FLOPs are 2 per multiply-add (n_in * n_out * n_tokens multiply-adds per product).
// Thread rules: drives `pool` (call from the thread that owns it); allocates per call.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "perf/stats.h"
#include "tensor/dtype.h"

namespace tally::perf {

struct KernelPeakOptions {
  int64_t n_in = 4096;               // reduction length (use the model's n_embd)
  int64_t rows_per_thread = 64;      // panel rows per thread: 64 x 4096 q8_0 is 272 KiB
  int64_t n_tokens = 64;             // activation rows per product
  int repetitions = 10;              // timed samples
  int warmup = 2;                    // untimed samples first
  double seconds_per_sample = 0.02;  // each sample repeats the product for about this long
};

struct KernelPeak {
  DType type = DType::kF32;
  Stats gflops;  // GFLOP/s (1e9) of each timed sample
  int64_t n_in = 0, n_out = 0, n_tokens = 0;
};

KernelPeak measure_kernel_peak(DType type, ThreadPool& pool, const KernelPeakOptions& options = {});

}  // namespace tally::perf
