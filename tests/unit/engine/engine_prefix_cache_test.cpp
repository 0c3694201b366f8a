// The prefix cache through the whole engine on stories260K: output with the cache equals
// output without it, byte for byte (tokens, text, log-probabilities), for greedy and seeded
// sampling, prefixes ending on and off a block boundary, one request at a time and all at
// once; attention over cached KV gives the same logits bits as computing the prompt in one
// chunk; the counters and cached_tokens.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace tally_test {
namespace {

struct PrefixWorkload {
  std::vector<tally::EngineRequest> requests;
  int64_t shared_tokens = 0;  // prompt tokens that repeat an earlier request's prefix
};

// Prompts made of one of three 200-token stems cut at a length from 0 to 200 (on and off
// the 16-token block boundary), then a private tail; every third request samples with a seed.
PrefixWorkload shared_prefix_workload(int32_t n, uint64_t seed) {
  PrefixWorkload w;
  const std::vector<int32_t> cuts{0, 1, 15, 16, 17, 32, 47, 64, 100, 128, 160, 199, 200};
  uint64_t x = seed;
  auto next = [&x](int32_t lo, int32_t hi) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return lo + static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(hi - lo + 1));
  };
  for (int32_t i = 0; i < n; ++i) {
    const int32_t cut = cuts[static_cast<size_t>(next(0, static_cast<int32_t>(cuts.size()) - 1))];
    std::vector<int32_t> prompt = make_prompt(std::max(cut, 1), 7 + next(0, 2));
    const std::vector<int32_t> tail = make_prompt(next(2, 24), 5000 + seed + i);
    prompt.insert(prompt.end(), tail.begin() + 1, tail.end());  // the tail's BOS dropped
    tally::EngineRequest r = greedy_request(std::move(prompt), next(1, 20));
    r.sampling.logprobs = true;
    r.sampling.top_logprobs = 2;
    if (i % 3 == 2) {
      r.sampling.temperature = 0.9f;
      r.sampling.seed = 300 + i;
    }
    w.shared_tokens += cut;
    w.requests.push_back(std::move(r));
  }
  return w;
}

std::vector<RequestLog> run_requests(tally::Engine& engine, const PrefixWorkload& w,
                                     bool together) {
  std::vector<RequestLog> logs;
  if (!together) {
    for (const tally::EngineRequest& r : w.requests) logs.push_back(run_alone(engine, r));
    return logs;
  }
  Collector c;
  for (size_t i = 0; i < w.requests.size(); ++i) {
    auto id = engine.submit(w.requests[i], c.callback(static_cast<int64_t>(i)));
    EXPECT_TRUE(id.ok()) << id.status().to_string();
  }
  EXPECT_TRUE(c.wait(static_cast<int64_t>(w.requests.size()), 300));
  for (size_t i = 0; i < w.requests.size(); ++i) logs.push_back(c.log(static_cast<int64_t>(i)));
  return logs;
}

// Tokens, finish, text and every log-probability compared bit for bit.
void expect_identical(const RequestLog& got, const RequestLog& want, size_t i) {
  ASSERT_TRUE(got.done && want.done) << "request " << i;
  ASSERT_FALSE(got.error || want.error) << "request " << i << ": " << got.status.to_string();
  EXPECT_EQ(got.tokens, want.tokens) << "request " << i;
  EXPECT_EQ(got.finish, want.finish) << "request " << i;
  EXPECT_EQ(got.text, want.text) << "request " << i;
  ASSERT_EQ(got.events.size(), want.events.size()) << "request " << i;
  for (size_t k = 0; k < got.events.size(); ++k) {
    const tally::EngineEvent& a = got.events[k];
    const tally::EngineEvent& b = want.events[k];
    ASSERT_EQ(a.logprob.has_value(), b.logprob.has_value());
    if (a.logprob) {
      EXPECT_EQ(std::memcmp(&*a.logprob, &*b.logprob, sizeof(float)), 0)
          << "request " << i << " event " << k << ": " << *a.logprob << " vs " << *b.logprob;
    }
    ASSERT_EQ(a.top_logprobs.size(), b.top_logprobs.size());
    for (size_t t = 0; t < a.top_logprobs.size(); ++t) {
      EXPECT_EQ(a.top_logprobs[t].token, b.top_logprobs[t].token);
      EXPECT_EQ(std::memcmp(&a.top_logprobs[t].logprob, &b.top_logprobs[t].logprob,
                            sizeof(float)),
                0)
          << "request " << i << " event " << k;
    }
  }
}

int32_t cached_tokens_of(const RequestLog& log) {
  for (const tally::EngineEvent& e : log.events) {
    if (e.kind == tally::EngineEventKind::kFinished) return e.cached_tokens;
  }
  return -1;
}

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
