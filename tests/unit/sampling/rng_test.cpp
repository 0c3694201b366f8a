#include "sampling/rng.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace tally {
namespace {

// Reference outputs published with the algorithms (splitmix64.c, xoshiro256starstar.c).
TEST(SplitMix64, MatchesReferenceOutputsForSeedZero) {
  SplitMix64 sm(0);
  EXPECT_EQ(sm.next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(sm.next(), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(sm.next(), 0x06c45d188009454fULL);
}

TEST(Xoshiro256, MatchesReferenceOutputsForState1234) {
  Xoshiro256 rng = Xoshiro256::from_state(1, 2, 3, 4);
  EXPECT_EQ(rng.next_u64(), 11520ULL);
  EXPECT_EQ(rng.next_u64(), 0ULL);
  EXPECT_EQ(rng.next_u64(), 1509978240ULL);
  EXPECT_EQ(rng.next_u64(), 1215971899390074240ULL);
}

TEST(Xoshiro256, SeedingIsSplitMixOfTheSeed) {
  // Seed 0 must not give the all-zero (stuck) state; same seed, same stream.
  Xoshiro256 a(0), b(0), c(1);
  uint64_t first_a = a.next_u64();
  EXPECT_EQ(first_a, b.next_u64());
  EXPECT_NE(first_a, c.next_u64());
  bool any_nonzero = first_a != 0;
  for (int i = 0; i < 8; ++i) any_nonzero |= a.next_u64() != 0;
  EXPECT_TRUE(any_nonzero);
}

TEST(Xoshiro256, NextDoubleIsUniformInUnitInterval) {
  Xoshiro256 rng(7);
  constexpr int kN = 20000;
  int below_half = 0;
  double sum = 0.0;
  for (int i = 0; i < kN; ++i) {
    const double u = rng.next_double();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    below_half += u < 0.5;
  }
  EXPECT_NEAR(sum / kN, 0.5, 0.01);
  EXPECT_NEAR(static_cast<double>(below_half) / kN, 0.5, 0.015);
}

}  // namespace
}  // namespace tally
