// Paged attention throughput over each KV type, tinyllama's heads. Decode (bm_attention): B
// sequences of ctx positions each, one query token per sequence; prefill (bm_prefill): the
// last 512-token chunk of a ctx-token prompt, tiled or token by token. 32 query heads over 4
// KV heads of 64 dims. The KV pool holds several layers' worth of blocks and each call reads
// the next layer, so the K/V rows come from memory as in a model's step (one layer's K/V
// would otherwise sit in L2).
//   tally_attention_bench --benchmark_filter='f32/1/'   (args: threads / batch / ctx)
//   tally_attention_bench --benchmark_filter='prefill'  (args: threads / chunk / ctx)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/kv_row.h"
#include "tensor/kv_types.h"

namespace tally::cpu {
namespace {

constexpr int64_t kHeads = 32, kKvHeads = 4, kHeadDim = 64, kBlock = 16;
// TALLY_BENCH_LAYERS=1 keeps one layer's K/V in the caches: then the figure is the kernel's
// arithmetic rather than memory.
const int64_t kLayers = [] {
  const char* layers = std::getenv("TALLY_BENCH_LAYERS");
  return layers ? std::max<int64_t>(1, std::atoll(layers)) : int64_t{22};
}();

// A KV pool of `layers` layers for n_seqs sequences of ctx positions each, and the arguments
// of one attention call whose query tokens the caller sets.
struct BenchAttention {
  BenchAttention(DType type, int64_t n_seqs, int64_t ctx, int64_t n_tokens) : type(type) {
    const int64_t blocks_per_seq = (ctx + kBlock - 1) / kBlock;
    const int64_t n_blocks = n_seqs * blocks_per_seq;
    const int64_t row = kKvHeads * kHeadDim;
    slot_bytes = kv_row_bytes(type, kKvHeads, kHeadDim);
    layer_bytes = n_blocks * kBlock * slot_bytes;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    k.resize(layer_bytes * kLayers);
    // Any finite values: the speed does not depend on them.
    std::vector<float> values(row);
    for (size_t i = 0; i < k.size(); i += static_cast<size_t>(slot_bytes)) {
      for (float& x : values) x = u(rng);
      kv_row_store(type, values.data(), &k[i], row, kHeadDim);
    }
    v = k;
    // Blocks shuffled over the pool, as a long-running server's block tables are.
    ids.resize(n_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    tables.resize(n_seqs);
    for (int64_t s = 0; s < n_seqs; ++s) tables[s] = {ids.data() + s * blocks_per_seq, blocks_per_seq};
    positions.resize(n_tokens);
    seq_index.resize(n_tokens);
    q.resize(n_tokens * kHeads * kHeadDim);
    out.resize(q.size());
    for (auto& x : q) x = u(rng);
    a.n_tokens = n_tokens;
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
  }
  // Points the arguments at the next layer's K/V, so consecutive calls read from memory.
  const AttentionArgs& next_layer() {
    a.kv.k = k.data() + layer * layer_bytes;
    a.kv.v = v.data() + layer * layer_bytes;
    layer = (layer + 1) % kLayers;
    return a;
  }

  DType type;
  int64_t slot_bytes = 0, layer_bytes = 0, layer = 0;
  std::vector<uint8_t> k, v;
  std::vector<int32_t> ids, positions, seq_index;
  std::vector<BlockTableView> tables;
  std::vector<float> q, out;
  AttentionArgs a;
};

void bm_attention(benchmark::State& state, DType type) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t batch = state.range(1), ctx = state.range(2);
  BenchAttention b(type, batch, ctx, batch);
  std::fill(b.positions.begin(), b.positions.end(), static_cast<int32_t>(ctx - 1));
  std::iota(b.seq_index.begin(), b.seq_index.end(), 0);
  ThreadPool pool(threads);
  for (auto _ : state) {
    attention(b.next_layer(), pool);
    benchmark::DoNotOptimize(b.out.data());
  }
  const double bytes = 2.0 * static_cast<double>(batch * ctx * b.slot_bytes);
  state.counters["GB/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  // 4 FLOPs per (query head, position, dimension), as bm_prefill counts them.
  const double flops = 4.0 * kHeads * kHeadDim * static_cast<double>(batch * ctx);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["us/layer"] = benchmark::Counter(
      1e-6, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Prefill: the last chunk of a prompt of ctx positions (`chunk` query tokens of one sequence
// at positions ctx - chunk .. ctx - 1), through attention() (tiles of tokens) or token by
// token through attention_task (the kernel a tile replaces: the same bits, for comparison).
void bm_prefill(benchmark::State& state, DType type, bool tiled) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t chunk = state.range(1), ctx = state.range(2);
  BenchAttention b(type, 1, ctx, chunk);
  std::iota(b.positions.begin(), b.positions.end(), static_cast<int32_t>(ctx - chunk));
  ThreadPool pool(threads);
  const IsaLevel isa = cpu_isa_level();
  for (auto _ : state) {
    const AttentionArgs& a = b.next_layer();
    if (tiled) {
      attention(a, pool);
    } else {
      pool.parallel_for(chunk * kKvHeads, 1, [&](int64_t begin, int64_t end, int) {
        for (int64_t task = begin; task < end; ++task) attention_task(isa, a, task / kKvHeads, task % kKvHeads);
      });
    }
    benchmark::DoNotOptimize(b.out.data());
  }
  // 4 FLOPs per (query head, position, dimension): the score's and the weighted sum's fma.
  double flops = 0;
  for (int64_t t = 0; t < chunk; ++t) flops += 4.0 * kHeads * kHeadDim * static_cast<double>(ctx - chunk + t + 1);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ms/layer"] = benchmark::Counter(
      1e-3, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
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

void prefill_args(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2})
    for (int ctx : {512, 2048, 4096}) b->Args({threads, 512, ctx});
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK_CAPTURE(bm_prefill, f16_tiled, DType::kF16, true)->Apply(prefill_args);
BENCHMARK_CAPTURE(bm_prefill, f16_per_token, DType::kF16, false)->Apply(prefill_args);
BENCHMARK_CAPTURE(bm_prefill, q8_0_tiled, DType::kQ8_0, true)->Apply(prefill_args);
BENCHMARK_CAPTURE(bm_prefill, q8_0_per_token, DType::kQ8_0, false)->Apply(prefill_args);
BENCHMARK_CAPTURE(bm_prefill, f32_tiled, DType::kF32, true)->Apply(prefill_args);
BENCHMARK_CAPTURE(bm_prefill, f32_per_token, DType::kF32, false)->Apply(prefill_args);

}  // namespace
}  // namespace tally::cpu

BENCHMARK_MAIN();
