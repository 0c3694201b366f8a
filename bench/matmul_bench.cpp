// Matmul throughput: GB/s of weight bytes streamed for an n_out x n_in weight matrix against
// n_tokens activation rows (n_tokens = 1 is decode's matvec, which is memory-bound). Q8_0 and
// Q4_0 run repacked, as in a loaded model; *_rows runs them in GGUF's row layout.
//   tally_matmul_bench --benchmark_filter='q4_0'      (TALLY_ISA=avx2|scalar lowers the path)
// TALLY_BENCH_ROWS=512 shrinks the matrix until it sits in cache: then GB/s measures the
// kernels' arithmetic rather than memory.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_repack.h"
#include "tensor/quantize.h"

namespace tally::cpu {
namespace {

constexpr int64_t kCols = 4096;
const int64_t kRows = [] {
  const char* rows = std::getenv("TALLY_BENCH_ROWS");
  return rows ? std::max<int64_t>(1, std::atoll(rows)) : int64_t{4096};
}();

// One matrix per type, quantized once for all the benchmarks that use it.
const std::vector<uint8_t>& weights(DType type) {
  static std::map<DType, std::vector<uint8_t>> cache;
  auto it = cache.find(type);
  if (it != cache.end()) return it->second;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> row(kCols);
  const int64_t row_bytes = dtype_row_bytes(type, kCols);
  std::vector<uint8_t> bytes(kRows * row_bytes);
  for (int64_t o = 0; o < kRows; ++o) {
    for (auto& v : row) v = normal(rng);
    quantize_row(type, row.data(), bytes.data() + o * row_bytes, kCols);
  }
  return cache.emplace(type, std::move(bytes)).first->second;
}

// repack: Q8_0 / Q4_0 in the interleaved layout a loaded model uses (matmul_repack.h);
// without it, the GGUF row layout that matmul interleaves per task.
void bm_matmul(benchmark::State& state, DType type, bool repack) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t n_tokens = state.range(1);
  const auto& bytes = weights(type);
  WeightMatrix w{type, kCols, kRows, bytes.data(), dtype_row_bytes(type, kCols)};
  std::vector<float> x(n_tokens * kCols, 0.5f), y(n_tokens * kRows);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
  ThreadPool pool(threads);
  RepackedWeights repacked;
  if (repack) {
    repacked = RepackedWeights(w, pool);
    w = repacked.view();
  }
  matmul(w, x.data(), n_tokens, y.data(), pool);  // warm: scratch, caches, page faults
  for (auto _ : state) {
    matmul(w, x.data(), n_tokens, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double weight_bytes = static_cast<double>(bytes.size());
  state.counters["GB/s"] =
      benchmark::Counter(weight_bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(n_tokens),
                                               benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(kRows * kCols * n_tokens) / 1e9,
                         benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(matmul_path_name());
}

void args(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) b->Args({threads, 1});
  b->Args({2, 8});  // batched decode: the weights are still read once per call
  for (int threads : {1, 2}) b->Args({threads, 16});  // decode batch 16 (issue 11's target)
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(bm_matmul, q4_0, DType::kQ4_0, true)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, q8_0, DType::kQ8_0, true)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, q4_0_rows, DType::kQ4_0, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, q8_0_rows, DType::kQ8_0, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, f16, DType::kF16, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, q4_K, DType::kQ4_K, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, q6_K, DType::kQ6_K, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, q4_1, DType::kQ4_1, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, q5_0, DType::kQ5_0, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, q5_1, DType::kQ5_1, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, q2_K, DType::kQ2_K, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, q3_K, DType::kQ3_K, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, q5_K, DType::kQ5_K, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, iq4_nl, DType::kIQ4_NL, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, iq4_xs, DType::kIQ4_XS, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, bf16, DType::kBF16, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matmul, f32, DType::kF32, false)->Apply(args);

}  // namespace
}  // namespace tally::cpu

BENCHMARK_MAIN();
