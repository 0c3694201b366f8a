#include "sampling/sampler_steps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tally {
namespace {

std::vector<int32_t> ids_of(const TokenCandidates& c) {
  std::vector<int32_t> ids;
  for (const TokenCandidate& t : c.view()) ids.push_back(t.id);
  return ids;
}

// Logits whose softmax is exactly `probs` (up to float rounding).
std::vector<float> logits_for(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

TokenCandidates filled(const std::vector<float>& logits) {
  TokenCandidates c(static_cast<int32_t>(logits.size()));
  c.fill(logits);
  return c;
}

TEST(TokenCandidates, FillSanitisesAndSortPrefixOrdersTheBest) {
  TokenCandidates c = filled({1.0f, NAN, 5.0f, INFINITY, 5.0f, -2.0f});
  EXPECT_TRUE(c.in_id_order());
  EXPECT_EQ(c[1].logit, -INFINITY);
  EXPECT_TRUE(std::isfinite(c[3].logit));
  c.sort_prefix(3);
  EXPECT_EQ(c.sorted_prefix(), 3u);
  EXPECT_FALSE(c.in_id_order());
  EXPECT_EQ(c[0].id, 3);
  EXPECT_EQ(c[1].id, 2);  // equal logits: lower id first
  EXPECT_EQ(c[2].id, 4);
  // Filtering keeps the surviving part of the best prefix sorted.
  c.retain([](const TokenCandidate& t) { return t.id != 2; });
  EXPECT_EQ(c.size(), 5u);
  EXPECT_EQ(c.sorted_prefix(), 2u);
  EXPECT_EQ(c[0].id, 3);
  EXPECT_EQ(c[1].id, 4);
}

TEST(TokenCandidates, SortPrefixMatchesAFullSortForSmallAndLargePrefixes) {
  // Both selection paths (heap for small prefixes, nth_element for large) and growing an
  // existing prefix must give the full sort's prefix; ties are frequent on purpose.
  Xoshiro256 rng(31);
  std::vector<float> logits(2000);
  for (float& l : logits) l = static_cast<float>(rng.next_u64() % 50);
  std::vector<TokenCandidate> reference;
  for (size_t i = 0; i < logits.size(); ++i) {
    reference.push_back({static_cast<int32_t>(i), logits[i], 0.0f});
  }
  std::sort(reference.begin(), reference.end(), candidate_before);
  for (const std::vector<size_t>& steps : std::vector<std::vector<size_t>>{
           {5}, {256}, {300}, {1999}, {64, 256, 1024, 2000}}) {
    TokenCandidates c = filled(logits);
    for (size_t m : steps) {
      c.sort_prefix(m);
      ASSERT_EQ(c.sorted_prefix(), m);
      for (size_t i = 0; i < m; ++i) ASSERT_EQ(c[i].id, reference[i].id) << "m=" << m;
    }
    std::vector<int32_t> all = ids_of(c);  // nothing lost or duplicated
    std::sort(all.begin(), all.end());
    for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<int32_t>(i));
  }
}

TEST(TopKStep, KeepsTheKBestSortedWithLowestIdOnTies) {
  TokenCandidates c = filled({0.5f, 3.0f, 1.0f, 3.0f, -1.0f, 2.0f});
  TopKStep(3).apply(c, {});
  EXPECT_EQ(ids_of(c), (std::vector<int32_t>{1, 3, 5}));
  TopKStep(10).apply(c, {});  // k past the size: unchanged
  EXPECT_EQ(ids_of(c), (std::vector<int32_t>{1, 3, 5}));
}

TEST(TopPStep, KeepsTheSmallestSetReachingP) {
  // Sorted: id1 0.4, id3 0.3, id2 0.2, id0 0.1; running sums 0.4, 0.7, 0.9, 1.0.
  const std::vector<float> logits = logits_for({0.1, 0.4, 0.2, 0.3});
  TokenCandidates c = filled(logits);
  TopPStep(0.65f).apply(c, {});
  EXPECT_EQ(ids_of(c), (std::vector<int32_t>{1, 3}));
  c.fill(logits);
  TopPStep(0.75f).apply(c, {});
  EXPECT_EQ(ids_of(c), (std::vector<int32_t>{1, 3, 2}));
  c.fill(logits);
  TopPStep(0.3f).apply(c, {});
  EXPECT_EQ(ids_of(c), (std::vector<int32_t>{1}));
  c.fill(logits);
  TopPStep(0.0f).apply(c, {});  // always at least one token
  EXPECT_EQ(ids_of(c), (std::vector<int32_t>{1}));
}

TEST(TopPStep, GrowsTheSortedPrefixPastTheFirstChunk) {
  // 200 equal tokens (0.005 each): 0.503 needs 101 of them, more than the first 64 sorted.
  TokenCandidates c = filled(std::vector<float>(200, 0.25f));
  TopPStep(0.503f).apply(c, {});
  ASSERT_EQ(c.size(), 101u);
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i].id, static_cast<int32_t>(i));
}

TEST(MinPStep, ThresholdIsRelativeToTheMostLikely) {
  const std::vector<float> logits = logits_for({0.5, 0.2, 0.04, 0.26});
  TokenCandidates c = filled(logits);
  MinPStep(0.1f).apply(c, {});  // keep p >= 0.05
  EXPECT_EQ(ids_of(c), (std::vector<int32_t>{0, 1, 3}));
  c.fill(logits);
  MinPStep(0.5f).apply(c, {});  // keep p >= 0.25
  EXPECT_EQ(ids_of(c), (std::vector<int32_t>{0, 3}));
  c.fill(logits);
  MinPStep(1.0f).apply(c, {});
  EXPECT_EQ(ids_of(c), (std::vector<int32_t>{0}));
}

TEST(PenaltyStep, RepetitionDividesPositiveAndMultipliesNegativeLogits) {
  TokenCandidates c = filled({2.0f, -2.0f, 1.0f, 0.5f, 0.0f});
  PenaltyStep step({.repetition = 2.0f, .last_n = 64}, 5);
  const std::vector<int32_t> history = {0, 1, 0, 4};
  step.apply(c, history);
  EXPECT_FLOAT_EQ(c[0].logit, 1.0f);   // once, although it occurs twice
  EXPECT_FLOAT_EQ(c[1].logit, -4.0f);
  EXPECT_FLOAT_EQ(c[2].logit, 1.0f);   // not in history
  EXPECT_FLOAT_EQ(c[3].logit, 0.5f);
  EXPECT_FLOAT_EQ(c[4].logit, 0.0f);
}

TEST(PenaltyStep, PresenceAndFrequencyCountOverTheWindow) {
  const std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  const std::vector<int32_t> history = {0, 3, 3, 3, 1};
  PenaltyStep all({.presence = 1.0f, .frequency = 0.5f, .last_n = -1}, 4);
  TokenCandidates c = filled(logits);
  all.apply(c, history);
  EXPECT_FLOAT_EQ(c[0].logit, 1.0f - 0.5f - 1.0f);
  EXPECT_FLOAT_EQ(c[1].logit, 1.0f - 0.5f - 1.0f);
  EXPECT_FLOAT_EQ(c[2].logit, 1.0f);
  EXPECT_FLOAT_EQ(c[3].logit, 1.0f - 1.5f - 1.0f);
  // Counts are reset between calls: the same input gives the same output.
  c.fill(logits);
  all.apply(c, history);
  EXPECT_FLOAT_EQ(c[3].logit, 1.0f - 1.5f - 1.0f);

  PenaltyStep last3({.presence = 1.0f, .frequency = 0.5f, .last_n = 3}, 4);
  c.fill(logits);
  last3.apply(c, history);  // window {3, 3, 1}
  EXPECT_FLOAT_EQ(c[0].logit, 1.0f);
  EXPECT_FLOAT_EQ(c[1].logit, 1.0f - 0.5f - 1.0f);
  EXPECT_FLOAT_EQ(c[3].logit, 1.0f - 1.0f - 1.0f);
}

TEST(PenaltyStep, SkipsHistoryIdsOutsideTheVocabulary) {
  TokenCandidates c = filled({1.0f, 1.0f});
  PenaltyStep step({.presence = 1.0f, .last_n = -1}, 2);
  const std::vector<int32_t> history = {-1, 7, 1};
  step.apply(c, history);
  EXPECT_FLOAT_EQ(c[0].logit, 1.0f);
  EXPECT_FLOAT_EQ(c[1].logit, 0.0f);
}

TEST(LogitBiasStep, AddsAndBans) {
  TokenCandidates c = filled({1.0f, 5.0f, 2.0f});
  LogitBiasStep({{0, 3.0f}, {1, -INFINITY}, {0, 0.5f}}).apply(c, {});
  EXPECT_FLOAT_EQ(c[0].logit, 4.5f);
  EXPECT_EQ(c[1].logit, -INFINITY);
  GreedyStep().apply(c, {});
  EXPECT_EQ(c.selected, 0);
}

TEST(TemperatureStep, DividesLogits) {
  TokenCandidates c = filled({1.0f, -3.0f});
  TemperatureStep(0.5f).apply(c, {});
  EXPECT_FLOAT_EQ(c[0].logit, 2.0f);
  EXPECT_FLOAT_EQ(c[1].logit, -6.0f);
}

TEST(LogprobsStep, LogSoftmaxAtTheTemperatureAndTopN) {
  const std::vector<double> probs = {0.125, 0.5, 0.125, 0.25};
  TokenCandidates c = filled(logits_for(probs));
  LogprobsStep step(1.0f, 3);
  step.apply(c, {});
  EXPECT_TRUE(c.in_id_order());  // it only observes
  ASSERT_EQ(step.top().size(), 3u);
  EXPECT_EQ(step.top()[0].token, 1);
  EXPECT_EQ(step.top()[1].token, 3);
  EXPECT_EQ(step.top()[2].token, 0);  // tie with token 2: lower id
  EXPECT_NEAR(step.top()[0].logprob, std::log(0.5), 1e-6);
  EXPECT_NEAR(step.top()[2].logprob, std::log(0.125), 1e-6);
  EXPECT_NEAR(step.logprob_of(c[3].logit), std::log(0.25), 1e-6);

  // At temperature 2 the distribution is softmax(logit / 2): proportional to sqrt(p).
  LogprobsStep hot(2.0f, 1);
  hot.apply(c, {});
  double z = 0.0;
  for (double p : probs) z += std::sqrt(p);
  EXPECT_NEAR(hot.top()[0].logprob, std::log(std::sqrt(0.5) / z), 1e-6);
  EXPECT_NEAR(hot.logprob_of(TemperatureStep::scale(c[0].logit, 2.0f)),
              std::log(std::sqrt(0.125) / z), 1e-6);
}

}  // namespace
}  // namespace tally
