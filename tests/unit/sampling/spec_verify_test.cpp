// The speculative acceptance rule (sampling/spec_verify.h) against the exact target
// distribution: a two-token draft verified position by position must emit sequences with the
// probabilities the target gives them one token at a time.
#include "sampling/spec_verify.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include <gtest/gtest.h>

namespace tally {
namespace {

constexpr int32_t kVocab = 8;

SamplingParams chain_params(uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_k = 5;  // the processed p: softmax(logits / T) over the 5 largest
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

// What the sampler's chain makes of `logits` under chain_params().
std::vector<double> processed(const std::vector<float>& logits) {
  std::vector<float> sorted = logits;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  const float kth = sorted[4];
  std::vector<double> p(logits.size(), 0.0);
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] < kth) continue;
    p[i] = std::exp(static_cast<double>(logits[i] - sorted[0]) / 0.7);
    sum += p[i];
  }
  for (double& v : p) v /= sum;
  return p;
}

TEST(SpecVerify, TwoTokenDraftEmitsTheTargetDistribution) {
  const std::vector<std::vector<float>> logits = {
      {1.0f, 2.5f, 0.3f, 2.2f, -1.0f, 0.9f, 1.7f, -3.0f},
      {0.2f, 0.1f, 3.0f, 1.0f, 2.4f, -0.5f, 0.0f, 1.1f},
      {1.5f, 1.4f, 1.3f, 1.2f, 1.1f, 1.0f, 0.9f, 0.8f},
  };
  const int32_t draft[2] = {1, 2};  // likely tokens, so the chain often goes on
  std::vector<std::vector<double>> p;
  for (const auto& l : logits) p.push_back(processed(l));

  // Outcome key: position * kVocab + the token that ended the walk.
  std::map<int32_t, double> want;
  double reach = 1.0;
  for (int32_t pos = 0; pos < 3; ++pos) {
    for (int32_t t = 0; t < kVocab; ++t) {
      if (pos < 2 && t == draft[pos]) continue;
      want[pos * kVocab + t] += reach * p[pos][t];
    }
    if (pos < 2) reach *= p[pos][draft[pos]];
  }

  constexpr int kDraws = 1'000'000;
  Sampler sampler(chain_params(7), kVocab);
  std::map<int32_t, double> got;
  int64_t accepted_first = 0;
  for (int n = 0; n < kDraws; ++n) {
    for (int32_t pos = 0; pos < 3; ++pos) {
      const SpecPositionResult r =
          spec_verify_position(sampler, logits[pos], {}, pos < 2 ? draft[pos] : -1);
      if (pos == 0 && r.accepted) ++accepted_first;
      if (!r.accepted) {
        got[pos * kVocab + r.token] += 1.0 / kDraws;
        break;
      }
      ASSERT_EQ(r.token, draft[pos]);
    }
  }
  double tv = 0;
  for (const auto& [key, w] : want) tv += std::abs(w - got[key]);
  for (const auto& [key, g] : got) {
    if (want.find(key) == want.end()) tv += g;  // an outcome the target never gives
  }
  tv /= 2;
  EXPECT_LT(tv, 0.005);
  // Acceptance at the first position is p(d0) (min(1, p/q) with q one-hot).
  EXPECT_NEAR(static_cast<double>(accepted_first) / kDraws, p[0][draft[0]], 0.003);
}

TEST(SpecVerify, GreedyAcceptsExactlyTheArgmax) {
  SamplingParams g;
  g.temperature = 0.0f;
  Sampler sampler(g, kVocab);
  const std::vector<float> logits = {0.1f, 0.2f, 3.0f, 0.0f, 1.0f, -1.0f, 2.9f, 0.5f};
  for (int32_t d = 0; d < kVocab; ++d) {
    const SpecPositionResult r = spec_verify_position(sampler, logits, {}, d);
    EXPECT_EQ(r.token, 2);
    EXPECT_EQ(r.accepted, d == 2) << d;
  }
  EXPECT_FALSE(spec_verify_position(sampler, logits, {}, -1).accepted);  // the bonus position
}

TEST(SpecVerify, SeededTokensAreTheOnesWithoutSpeculation) {
  // The rule spends the sampler's draws exactly as plain sampling does: same seed, same tokens.
  const std::vector<float> logits = {1.0f, 2.5f, 0.3f, 2.2f, -1.0f, 0.9f, 1.7f, -3.0f};
  Sampler plain(chain_params(11), kVocab);
  Sampler spec(chain_params(11), kVocab);
  for (int n = 0; n < 1000; ++n) {
    const int32_t want = plain.sample(logits, {});
    EXPECT_EQ(spec_verify_position(spec, logits, {}, n % kVocab).token, want) << n;
  }
}

}  // namespace
}  // namespace tally
