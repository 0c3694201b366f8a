// Batch invariance through the whole engine (acceptance 1): 64 concurrent requests of mixed
// lengths, chunked prefill, a KV pool small enough to force preemptions; every request's
// tokens equal, bit for bit, what it produces running alone. Also across thread counts and
// token budgets.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace tally_test {
namespace {

struct Workload {
  std::vector<tally::EngineRequest> requests;
};

// Mixed prompt and output lengths; every fourth request samples (seeded), the rest are greedy.
Workload mixed_workload(int32_t n, uint64_t seed) {
  Workload w;
  uint64_t x = seed;
  auto next = [&x](int32_t lo, int32_t hi) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return lo + static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(hi - lo + 1));
  };
  for (int32_t i = 0; i < n; ++i) {
    tally::EngineRequest r = greedy_request(make_prompt(next(2, 96), seed + i), next(4, 48));
    if (i % 4 == 3) {
      r.sampling.temperature = 0.9f;
      r.sampling.seed = 1000 + i;
    }
    w.requests.push_back(std::move(r));
  }
  return w;
}

std::vector<RequestLog> run_together(tally::Engine& engine, const Workload& w) {
  Collector c;
  for (size_t i = 0; i < w.requests.size(); ++i) {
    auto id = engine.submit(w.requests[i], c.callback(static_cast<int64_t>(i)));
    EXPECT_TRUE(id.ok()) << id.status().to_string();
  }
  EXPECT_TRUE(c.wait(static_cast<int64_t>(w.requests.size())));
  std::vector<RequestLog> logs;
  for (size_t i = 0; i < w.requests.size(); ++i) logs.push_back(c.log(static_cast<int64_t>(i)));
  return logs;
}

void expect_same(const RequestLog& got, const RequestLog& want, size_t i) {
  ASSERT_TRUE(got.done && want.done) << "request " << i;
  EXPECT_FALSE(got.error) << "request " << i << ": " << got.status.to_string();
  EXPECT_EQ(got.tokens, want.tokens) << "request " << i;
  EXPECT_EQ(got.finish, want.finish) << "request " << i;
  EXPECT_EQ(got.text, want.text) << "request " << i;
}

TEST(EngineBatch, SixtyFourRequestsWithPreemptionMatchEachRunAlone) {
  tally::EngineConfig c = stories_config();
  c.max_batched_tokens = 64;  // prompts of up to 96 tokens are chunked
  c.max_seqs = 16;
  c.kv_cache_memory = 16 * 16 * 1280;  // 16 blocks = 256 tokens for 16 sequences
  auto engine = make_engine(c);
  ASSERT_TRUE(engine);
  ASSERT_EQ(engine->ledger().kv_blocks, 16);
  const Workload w = mixed_workload(64, 7);
  const auto together = run_together(*engine, w);
  const tally::EngineMetrics m = engine->metrics();
  EXPECT_GT(m.num_preemptions_total, 0) << "the pool was meant to be too small";
  EXPECT_EQ(m.kv_blocks_free, m.kv_blocks_total);
  for (size_t i = 0; i < w.requests.size(); ++i) {
    const RequestLog alone = run_alone(*engine, w.requests[i]);
    expect_same(together[i], alone, i);
    EXPECT_FALSE(alone.tokens.at(0).empty());
  }
}

TEST(EngineBatch, ThreadCountAndTokenBudgetDoNotChangeOutputs) {
  const Workload w = mixed_workload(16, 11);
  tally::EngineConfig c = stories_config();
  auto one = make_engine(c);
  ASSERT_TRUE(one);
  const auto base = run_together(*one, w);
  one.reset();
  c.threads = 2;
  c.max_batched_tokens = 24;
  auto two = make_engine(c);
  ASSERT_TRUE(two);
  const auto other = run_together(*two, w);
  for (size_t i = 0; i < w.requests.size(); ++i) expect_same(other[i], base[i], i);
}

TEST(EngineBatch, StaticSchedulingGivesTheSameOutputs) {
  const Workload w = mixed_workload(12, 5);
  tally::EngineConfig c = stories_config();
  c.max_seqs = 4;
  auto paged = make_engine(c);
  ASSERT_TRUE(paged);
  const auto base = run_together(*paged, w);
  paged.reset();
  c.static_batching = true;
  auto fixed = make_engine(c);
  ASSERT_TRUE(fixed);
  const auto other = run_together(*fixed, w);
  for (size_t i = 0; i < w.requests.size(); ++i) expect_same(other[i], base[i], i);
  EXPECT_EQ(fixed->metrics().num_preemptions_total, 0);
}

}  // namespace
}  // namespace tally_test
