#include "sched/ngram_draft.h"

#include <algorithm>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace tally {
namespace {

std::vector<int32_t> draft_of(const std::vector<int32_t>& tokens, int32_t lo, int32_t hi,
                              size_t k) {
  std::vector<int32_t> d(k, -1);
  d.resize(static_cast<size_t>(ngram_draft(tokens, lo, hi, d)));
  return d;
}

TEST(NgramDraft, ProposesTheContinuationOfTheMatch) {
  // "1 2 3 4 5 ... 1 2" -> "3 4 5"
  EXPECT_EQ(draft_of({1, 2, 3, 4, 5, 9, 1, 2}, 1, 3, 3), (std::vector<int32_t>{3, 4, 5}));
}

TEST(NgramDraft, LongerMatchWinsOverALaterShorterOne) {
  // Suffix "7 8": the 2-gram occurs at 0 (-> 1), the 1-gram "8" latest at 4 (-> 2).
  EXPECT_EQ(draft_of({7, 8, 1, 1, 8, 2, 7, 8}, 1, 2, 1), (std::vector<int32_t>{1}));
  // With ngram_max 1 only the latest "8" counts.
  EXPECT_EQ(draft_of({7, 8, 1, 1, 8, 2, 7, 8}, 1, 1, 1), (std::vector<int32_t>{2}));
}

TEST(NgramDraft, LaterOccurrenceWinsAtTheSameLength) {
  EXPECT_EQ(draft_of({5, 1, 5, 2, 5}, 1, 1, 1), (std::vector<int32_t>{2}));
}

TEST(NgramDraft, ContinuesPeriodicallyPastTheLastKnownToken) {
  // The latest match of "3 3" is at 0, followed by one known token; the copy goes on
  // over what it proposed, so a loop is drafted to full length.
  EXPECT_EQ(draft_of({3, 3, 3}, 2, 2, 4), (std::vector<int32_t>{3, 3, 3, 3}));
  // "... 1 2 | 1 2": period 2.
  EXPECT_EQ(draft_of({9, 1, 2, 1, 2}, 2, 2, 5), (std::vector<int32_t>{1, 2, 1, 2, 1}));
  // The first proposal still comes from the known tokens.
  EXPECT_EQ(draft_of({1, 2, 3, 4, 5, 9, 1, 2}, 1, 3, 8),
            (std::vector<int32_t>{3, 4, 5, 9, 1, 2, 3, 4}));
}

TEST(NgramDraft, NoMatchNoDraft) {
  EXPECT_TRUE(draft_of({1, 2, 3, 4}, 1, 3, 4).empty());
  EXPECT_TRUE(draft_of({1}, 1, 3, 4).empty());
  EXPECT_TRUE(draft_of({}, 1, 3, 4).empty());
  EXPECT_TRUE(draft_of({1, 2, 1}, 2, 3, 4).empty());  // only a 1-gram would match
  EXPECT_TRUE(draft_of({1, 2, 1}, 1, 3, 0).empty());  // no room
}

// The definition, one suffix length at a time: for n from the longest down, the latest
// earlier start of the last n tokens; the draft copies on from its end.
std::vector<int32_t> draft_by_definition(const std::vector<int32_t>& t, int32_t lo, int32_t hi,
                                         size_t k) {
  const auto len = static_cast<int64_t>(t.size());
  for (int64_t n = std::min<int64_t>(hi, len - 1); n >= lo && k > 0; --n) {
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (!std::equal(t.end() - n, t.end(), t.begin() + start)) continue;
      std::vector<int32_t> d;
      for (int64_t at = start + n; d.size() < k; ++at) {
        d.push_back(at < len ? t[static_cast<size_t>(at)] : d[static_cast<size_t>(at - len)]);
      }
      return d;
    }
  }
  return {};
}

TEST(NgramDraft, MatchesTheDefinitionOnRandomSequences) {
  // Small alphabets make long, overlapping and repeated matches common.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 4000; ++trial) {
    const int32_t alphabet = 2 + static_cast<int32_t>(rng() % 6);
    std::vector<int32_t> t(rng() % 40);
    for (int32_t& v : t) v = static_cast<int32_t>(rng() % static_cast<uint32_t>(alphabet));
    const int32_t lo = 1 + static_cast<int32_t>(rng() % 3);
    const int32_t hi = lo + static_cast<int32_t>(rng() % 4);
    const size_t k = rng() % 6;
    ASSERT_EQ(draft_of(t, lo, hi, k), draft_by_definition(t, lo, hi, k))
        << "trial " << trial << " alphabet " << alphabet << " ngram " << lo << ".." << hi;
  }
}

TEST(NgramDraft, ConfigAndModeNames) {
  EXPECT_EQ(*spec_mode_from_name("ngram"), SpecMode::kNgram);
  EXPECT_EQ(*spec_mode_from_name("auto"), SpecMode::kAuto);
  EXPECT_EQ(*spec_mode_from_name("off"), SpecMode::kOff);
  EXPECT_EQ(*spec_mode_from_name("draft"), SpecMode::kDraft);
  EXPECT_EQ(spec_mode_name(SpecMode::kDraft), "draft");
  EXPECT_FALSE(spec_mode_from_name("eagle").ok());
  EXPECT_EQ(spec_mode_name(SpecMode::kNgram), "ngram");
  SpecConfig c;
  EXPECT_TRUE(c.validate().ok());
  c.ngram_min = 3;
  c.ngram_max = 2;
  EXPECT_FALSE(c.validate().ok());
  c.ngram_min = 0;
  EXPECT_FALSE(c.validate().ok());
  c = SpecConfig{};
  c.num_speculative_tokens = -1;
  EXPECT_FALSE(c.validate().ok());
}

}  // namespace
}  // namespace tally
