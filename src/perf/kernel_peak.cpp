#include "perf/kernel_peak.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_repack.h"
#include "base/check.h"
#include "perf/seconds_since.h"
#include "tensor/quantize.h"

namespace tally::perf {

KernelPeak measure_kernel_peak(DType type, ThreadPool& pool, const KernelPeakOptions& o) {
  TALLY_CHECK(
      o.n_in > 0 && o.rows_per_thread > 0 && o.n_tokens > 0 && o.repetitions > 0 && o.warmup >= 0,
      "kernel peak: bad options n_in={} rows={} tokens={} reps={}", o.n_in, o.rows_per_thread,
      o.n_tokens, o.repetitions);
  TALLY_CHECK(o.n_in % dtype_info(type).block_size == 0,
              "kernel peak: n_in={} is not a multiple of {}'s block", o.n_in, dtype_name(type));
  KernelPeak r;
  r.type = type;
  r.n_in = o.n_in;
  r.n_out = o.rows_per_thread * pool.n_threads();
  r.n_tokens = o.n_tokens;

  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  const int64_t row_bytes = dtype_row_bytes(type, o.n_in);
  std::vector<float> values(static_cast<size_t>(o.n_in));
  std::vector<uint8_t> bytes(static_cast<size_t>(r.n_out * row_bytes));  // [n_out][row_bytes]
  for (int64_t i = 0; i < r.n_out; ++i) {
    for (float& v : values) v = normal(rng);
    quantize_row(type, values.data(), bytes.data() + i * row_bytes, o.n_in);
  }
  std::vector<float> x(static_cast<size_t>(o.n_tokens * o.n_in));  // [n_tokens][n_in]
  for (float& v : x) v = normal(rng) * 20.0f;
  std::vector<float> y(static_cast<size_t>(o.n_tokens * r.n_out));  // [n_tokens][n_out]
  cpu::WeightMatrix w{type, o.n_in, r.n_out, bytes.data(), row_bytes};
  // In the layout a loaded model has (Q8_0 / Q4_0 are repacked at load time).
  cpu::RepackedWeights repacked;
  if (cpu::repack_supported(type)) {
    repacked = cpu::RepackedWeights(w, pool);
    w = repacked.view();
  }

  // Repeats per sample: enough for seconds_per_sample, from one timed calibration call.
  const double flops = 2.0 * static_cast<double>(o.n_in * r.n_out * o.n_tokens);
  auto t0 = std::chrono::steady_clock::now();
  cpu::matmul_repeat(w, x.data(), o.n_tokens, y.data(), 2, pool);
  const double per_repeat = std::max(seconds_since(t0) / 2, 1e-7);
  const int64_t repeats =
      std::clamp<int64_t>(static_cast<int64_t>(o.seconds_per_sample / per_repeat), 1, 1 << 20);

  std::vector<double> samples;
  for (int i = 0; i < o.warmup + o.repetitions; ++i) {
    t0 = std::chrono::steady_clock::now();
    cpu::matmul_repeat(w, x.data(), o.n_tokens, y.data(), repeats, pool);
    const double s = std::max(seconds_since(t0), 1e-9);
    if (i >= o.warmup) samples.push_back(flops * static_cast<double>(repeats) / s / 1e9);
  }
  r.gflops = stats_of(samples);
  return r;
}

}  // namespace tally::perf
