// The speculative acceptance rule (sampling/spec_verify.h) against the exact target
// distribution: a two-token draft verified position by position must emit sequences with the
// probabilities the target gives them one token at a time.
#include "sampling/spec_verify.h"

#include "sampling/rng.h"
#include "sampling/spec_rejection.h"

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

// A draft drawn from a real q (a draft model's): d ~ q, then the target's rejection sampling.
// The emitted token must follow p, and the acceptance must be sum min(p, q).
double draw_with_q(Sampler& sampler, Xoshiro256& draft_rng, const std::vector<float>& logits,
                   const std::vector<float>& q, std::vector<double>& hist) {
  constexpr int kDraws = 1'000'000;
  int64_t accepted = 0;
  for (int n = 0; n < kDraws; ++n) {
    const double u = draft_rng.next_double();
    double cum = 0;
    int32_t d = kVocab - 1;
    for (int32_t t = 0; t < kVocab; ++t) {
      cum += q[t];
      if (q[t] > 0 && cum > u) {
        d = t;
        break;
      }
    }
    const SpecPositionResult r = spec_verify_position(sampler, logits, {}, d, q);
    if (r.accepted) {
      EXPECT_EQ(r.token, d);
      ++accepted;
    }
    hist[static_cast<size_t>(r.token)] += 1.0 / kDraws;
  }
  return static_cast<double>(accepted) / kDraws;
}

TEST(SpecVerify, RejectionWithARealQEmitsTheTargetDistribution) {
  const std::vector<float> logits = {1.0f, 2.5f, 0.3f, 2.2f, -1.0f, 0.9f, 1.7f, -3.0f};
  const std::vector<double> p = processed(logits);
  // A draft model's q: wrong in shape, mass on tokens top-k drops from p (2, 4, 7), none on 1.
  const std::vector<float> q = {0.30f, 0.0f, 0.05f, 0.25f, 0.05f, 0.15f, 0.10f, 0.10f};
  Sampler sampler(chain_params(21), kVocab);
  Xoshiro256 draft_rng(99);
  std::vector<double> hist(kVocab, 0.0);
  const double acceptance = draw_with_q(sampler, draft_rng, logits, q, hist);
  double tv = 0, overlap = 0;
  for (int32_t t = 0; t < kVocab; ++t) {
    tv += std::abs(hist[t] - p[t]) / 2;
    overlap += std::min(p[t], static_cast<double>(q[t]));
  }
  EXPECT_LT(tv, 0.005);
  EXPECT_NEAR(acceptance, overlap, 0.003);  // P(accept) = sum min(p, q)
}

TEST(SpecVerify, RealQEqualToPAcceptsEverything) {
  const std::vector<float> logits = {1.0f, 2.5f, 0.3f, 2.2f, -1.0f, 0.9f, 1.7f, -3.0f};
  const std::vector<double> p = processed(logits);
  std::vector<float> q(p.begin(), p.end());
  Sampler sampler(chain_params(5), kVocab);
  Xoshiro256 draft_rng(6);
  std::vector<double> hist(kVocab, 0.0);
  // Rounding p to float may leave q(d) a hair above p(d): all but a handful accepted.
  EXPECT_GT(draw_with_q(sampler, draft_rng, logits, q, hist), 0.9999);
}

TEST(SpecVerify, ResidualDrawTakesOnlyWhereTheTargetExceedsTheDraft) {
  const std::vector<float> p = {0.5f, 0.2f, 0.3f, 0.0f};
  const std::vector<float> q = {0.6f, 0.0f, 0.1f, 0.3f};
  // Residual max(0, p - q) = {0, 0.2, 0.2, 0}: half each to tokens 1 and 2.
  EXPECT_EQ(spec_residual_sample(p, q, 0.0), 1);
  EXPECT_EQ(spec_residual_sample(p, q, 0.49), 1);
  EXPECT_EQ(spec_residual_sample(p, q, 0.51), 2);
  EXPECT_EQ(spec_residual_sample(p, q, 0.999999), 2);
  EXPECT_EQ(spec_residual_sample(p, p, 0.6), 1);  // no residual: p itself (0.5 <= 0.6 < 0.7)
  EXPECT_TRUE(spec_accepts_draft(p, q, 2, 0.999));   // p(2) > q(2): always
  EXPECT_FALSE(spec_accepts_draft(p, q, 3, 0.0));    // p(3) = 0: never
  EXPECT_TRUE(spec_accepts_draft(p, q, 0, 0.83));    // 0.83 * 0.6 < 0.5
  EXPECT_FALSE(spec_accepts_draft(p, q, 0, 0.84));
}

}  // namespace
}  // namespace tally
