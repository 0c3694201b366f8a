// Paged attention throughput for decode over each KV type: B sequences of ctx positions each,
// one query token per sequence, tinyllama's heads (32 query heads over 4 KV heads of 64 dims). The KV pool holds
// several layers' worth of blocks and each call reads the next layer, so the K/V rows come from
// memory as in a model's step (one layer's K/V would otherwise sit in L2).
//   tally_attention_bench --benchmark_filter='f32/1/'   (args: threads / batch / ctx)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/kv_row.h"

namespace tally::cpu {
namespace {

constexpr int64_t kHeads = 32, kKvHeads = 4, kHeadDim = 64, kBlock = 16;
// TALLY_BENCH_LAYERS=1 keeps one layer's K/V in the caches: then the figure is the kernel's
// arithmetic rather than memory.
const int64_t kLayers = [] {
  const char* layers = std::getenv("TALLY_BENCH_LAYERS");
  return layers ? std::max<int64_t>(1, std::atoll(layers)) : int64_t{22};
}();

void bm_attention(benchmark::State& state, DType type) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t batch = state.range(1), ctx = state.range(2);
  const int64_t blocks_per_seq = (ctx + kBlock - 1) / kBlock;
  const int64_t n_blocks = batch * blocks_per_seq;
  const int64_t row = kKvHeads * kHeadDim;
  const int64_t slot_bytes = dtype_row_bytes(type, row);
  const int64_t layer_bytes = n_blocks * kBlock * slot_bytes;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint8_t> k(layer_bytes * kLayers), v(layer_bytes * kLayers);
  // Any finite values: the speed does not depend on them.
  std::vector<float> values(row);
  for (size_t i = 0; i < k.size(); i += static_cast<size_t>(slot_bytes)) {
    for (float& x : values) x = u(rng);
    kv_row_store(type, values.data(), &k[i], row);
  }
  v = k;
  // Blocks shuffled over the pool, as a long-running server's block tables are.
  std::vector<int32_t> ids(n_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<BlockTableView> tables(batch);
  for (int64_t s = 0; s < batch; ++s) tables[s] = {ids.data() + s * blocks_per_seq, blocks_per_seq};
  std::vector<int32_t> positions(batch, static_cast<int32_t>(ctx - 1)), seq_index(batch);
  std::iota(seq_index.begin(), seq_index.end(), 0);
  std::vector<float> q(batch * kHeads * kHeadDim), out(q.size());
  for (auto& x : q) x = u(rng);
  ThreadPool pool(threads);
  AttentionArgs a;
  a.n_tokens = batch;
  a.n_heads = kHeads;
  a.n_kv_heads = kKvHeads;
  a.head_dim = kHeadDim;
  a.q = q.data();
  a.out = out.data();
  a.positions = positions.data();
  a.seq_index = seq_index.data();
  a.block_tables = tables.data();
  a.kv.block_size = kBlock;
  a.kv.k_dtype = type;
  a.kv.v_dtype = type;
  int64_t layer = 0;
  for (auto _ : state) {
    a.kv.k = k.data() + layer * layer_bytes;
    a.kv.v = v.data() + layer * layer_bytes;
    attention(a, pool);
    benchmark::DoNotOptimize(out.data());
    layer = (layer + 1) % kLayers;
  }
  const double bytes = 2.0 * static_cast<double>(batch * ctx * slot_bytes);
  state.counters["GB/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["us/layer"] = benchmark::Counter(
      1e-6, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void args(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2})
    for (int batch : {1, 8, 16})
      for (int ctx : {128, 1024, 2048}) b->Args({threads, batch, ctx});
  b->UseRealTime();
}

BENCHMARK_CAPTURE(bm_attention, f32, DType::kF32)->Apply(args);
BENCHMARK_CAPTURE(bm_attention, f16, DType::kF16)->Apply(args);
BENCHMARK_CAPTURE(bm_attention, q8_0, DType::kQ8_0)->Apply(args);
BENCHMARK_CAPTURE(bm_attention, q4_0, DType::kQ4_0)->Apply(args);

}  // namespace
}  // namespace tally::cpu

BENCHMARK_MAIN();
