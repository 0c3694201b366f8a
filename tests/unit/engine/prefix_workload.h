// Workloads of prompts with shared prefixes for the engine's prefix-cache and offload tests,
// and a bit-for-bit comparison of two runs' outputs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace tally_test {

struct PrefixWorkload {
  std::vector<tally::EngineRequest> requests;
  int64_t shared_tokens = 0;  // prompt tokens that repeat an earlier request's prefix
};

// Prompts made of one of three 200-token stems cut at a length from 0 to 200 (on and off
// the 16-token block boundary), then a private tail; every third request samples with a seed.
inline PrefixWorkload shared_prefix_workload(int32_t n, uint64_t seed) {
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

inline std::vector<RequestLog> run_requests(tally::Engine& engine, const PrefixWorkload& w,
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
inline void expect_identical(const RequestLog& got, const RequestLog& want, size_t i) {
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

inline int32_t cached_tokens_of(const RequestLog& log) {
  for (const tally::EngineEvent& e : log.events) {
    if (e.kind == tally::EngineEventKind::kFinished) return e.cached_tokens;
  }
  return -1;
}

}  // namespace tally_test
