// Arrival times: all at once for inf; Poisson at the asked rate (mean and spread of the gaps
// within statistical tolerance over many samples); burstiness shapes the spread; seeded.
#include "loadgen/arrival_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loadgen/rng.h"

namespace tally::loadgen {
namespace {

struct GapStats {
  double mean = 0;
  double cv = 0;  // standard deviation / mean
};

GapStats gap_stats(const std::vector<double>& times) {
  std::vector<double> gaps;
  for (size_t i = 1; i < times.size(); ++i) gaps.push_back(times[i] - times[i - 1]);
  double sum = 0;
  for (double g : gaps) sum += g;
  const double mean = sum / static_cast<double>(gaps.size());
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  return {mean, std::sqrt(var / static_cast<double>(gaps.size())) / mean};
}

TEST(ArrivalSchedule, InfiniteRateSendsEverythingAtZero) {
  for (double rate : {0.0, std::numeric_limits<double>::infinity()}) {
    const auto t = arrival_times({rate, 1.0, 7}, 5);
    ASSERT_EQ(t.size(), 5u);
    for (double v : t) EXPECT_EQ(v, 0.0);
  }
}

TEST(ArrivalSchedule, PoissonGapsHaveTheRateAndExponentialSpread) {
  // 40000 gaps: the mean's relative standard error is 1/sqrt(n) = 0.5%; 3% is > 5 sigma.
  const auto t = arrival_times({8.0, 1.0, 42}, 40001);
  EXPECT_EQ(t[0], 0.0);
  for (size_t i = 1; i < t.size(); ++i) ASSERT_GE(t[i], t[i - 1]);
  const GapStats s = gap_stats(t);
  EXPECT_NEAR(s.mean, 1.0 / 8.0, 0.03 / 8.0);
  EXPECT_NEAR(s.cv, 1.0, 0.05);  // exponential: sd == mean
  EXPECT_NEAR(static_cast<double>(t.size() - 1) / t.back(), 8.0, 0.25);
}

TEST(ArrivalSchedule, BurstinessIsTheGammaShape) {
  // Gamma(k): cv = 1 / sqrt(k), mean unchanged.
  for (double k : {0.25, 4.0}) {
    const GapStats s = gap_stats(arrival_times({2.0, k, 3}, 40001));
    EXPECT_NEAR(s.mean, 0.5, 0.5 * 0.04) << k;
    EXPECT_NEAR(s.cv, 1.0 / std::sqrt(k), 0.08 / std::sqrt(k)) << k;
  }
}

TEST(ArrivalSchedule, SameSeedSameTimesOtherSeedOthers) {
  EXPECT_EQ(arrival_times({3.0, 1.0, 11}, 50), arrival_times({3.0, 1.0, 11}, 50));
  EXPECT_NE(arrival_times({3.0, 1.0, 11}, 50), arrival_times({3.0, 1.0, 12}, 50));
}

TEST(Rng, UniformIntCoversItsRangeOnly) {
  Rng rng(5);
  std::vector<int> seen(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const int64_t v = rng.uniform_int(3, 9);
    ASSERT_GE(v, 3);
    ASSERT_LE(v, 9);
    ++seen[static_cast<size_t>(v - 3)];
  }
  for (int c : seen) EXPECT_GT(c, 800);  // ~1000 each
}

}  // namespace
}  // namespace tally::loadgen
