// The prefix cache through the whole engine on stories260K: output with the cache equals
// output without it, byte for byte (tokens, text, log-probabilities), for greedy and seeded
// sampling, prefixes ending on and off a block boundary, one request at a time and all at
// once; attention over cached KV gives the same logits bits as computing the prompt in one
// chunk; the counters and cached_tokens.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "prefix_workload.h"

namespace tally_test {
namespace {

tally::EngineConfig prefix_engine_config(bool cache) {
  tally::EngineConfig c = stories_config();
  c.max_seqs = 8;
  c.kv_cache_memory = 40 * 16 * 1280;  // 40 blocks: evictions and preemptions under load
  c.prefix_cache = cache;
  return c;
}

// The workload on an engine without the cache (want) and one with it (got); both kept for
// their counters.
struct CacheOffOn {
  std::unique_ptr<tally::Engine> off = make_engine(prefix_engine_config(false));
  std::unique_ptr<tally::Engine> on = make_engine(prefix_engine_config(true));
  std::vector<RequestLog> want;
  std::vector<RequestLog> got;
  CacheOffOn(const PrefixWorkload& w, bool together) {
    if (!off || !on) return;
    want = run_requests(*off, w, together);
    got = run_requests(*on, w, together);
  }
};

TEST(EnginePrefixCache, OneAtATimeEqualsNoCacheBitForBit) {
  const PrefixWorkload w = shared_prefix_workload(40, 1);
  const CacheOffOn runs(w, false);
  ASSERT_EQ(runs.got.size(), w.requests.size());
  const auto& want = runs.want;
  const auto& got = runs.got;
  int64_t cached = 0;
  for (size_t i = 0; i < w.requests.size(); ++i) {
    expect_identical(got[i], want[i], i);
    EXPECT_EQ(cached_tokens_of(want[i]), 0);
    const int32_t c = cached_tokens_of(got[i]);
    EXPECT_EQ(c % 16, 0) << "only full blocks are cached";
    EXPECT_LT(c, static_cast<int32_t>(w.requests[i].prompt.size()));
    cached += c;
  }
  EXPECT_GT(cached, w.shared_tokens / 3);
  const tally::EngineMetrics m = runs.on->metrics();
  EXPECT_EQ(m.prefix_cache_hits_total, cached);  // one admission each: nothing preempted
  EXPECT_GE(m.prefix_cache_queries_total, m.prefix_cache_hits_total);
  EXPECT_EQ(runs.off->metrics().prefix_cache_hits_total, 0);
}

TEST(EnginePrefixCache, UnderLoadEqualsNoCacheBitForBit) {
  const PrefixWorkload w = shared_prefix_workload(48, 2);
  const CacheOffOn runs(w, true);
  ASSERT_EQ(runs.got.size(), w.requests.size());
  for (size_t i = 0; i < w.requests.size(); ++i) expect_identical(runs.got[i], runs.want[i], i);
  EXPECT_GT(runs.on->metrics().prefix_cache_hits_total, 0);
  EXPECT_GT(runs.on->metrics().num_preemptions_total + runs.off->metrics().num_preemptions_total,
            0);
}

TEST(EnginePrefixCache, AttentionOverCachedBlocksEqualsOneChunk) {
  // The same 70-token prompt: computed in one chunk (no cache), and as 4 cached blocks
  // (written by an earlier request that shares 64 tokens) + a 6-token tail. The first
  // token's log-probabilities are read off the logits: they must agree bit for bit.
  std::vector<int32_t> prompt = make_prompt(70, 42);
  std::vector<int32_t> warm(prompt.begin(), prompt.begin() + 66);
  warm[65] = 3;  // diverges after 4 full blocks
  tally::EngineRequest r = greedy_request(prompt, 4);
  r.sampling.logprobs = true;
  r.sampling.top_logprobs = 5;
  tally::EngineConfig c = prefix_engine_config(false);
  c.max_batched_tokens = 128;  // one chunk
  auto off = make_engine(c);
  c.prefix_cache = true;
  auto on = make_engine(c);
  ASSERT_TRUE(off && on);
  const RequestLog want = run_alone(*off, r);
  run_alone(*on, greedy_request(warm, 1));
  const RequestLog got = run_alone(*on, r);
  EXPECT_EQ(cached_tokens_of(got), 64);
  expect_identical(got, want, 0);
}

TEST(EnginePrefixCache, SaltSeparatesTenants) {
  auto on = make_engine(prefix_engine_config(true));
  ASSERT_TRUE(on);
  tally::EngineRequest r = greedy_request(make_prompt(50, 9), 2);
  r.cache_salt = "a";
  run_alone(*on, r);
  r.cache_salt = "b";
  EXPECT_EQ(cached_tokens_of(run_alone(*on, r)), 0);
  r.cache_salt = "a";
  EXPECT_EQ(cached_tokens_of(run_alone(*on, r)), 48);
}

}  // namespace
}  // namespace tally_test
