// Order statistics on known data: rank interpolation, unsorted input, one sample, none.
#include "perf/stats.h"

#include <vector>

#include <gtest/gtest.h>

namespace tally::perf {
namespace {

TEST(Stats, OneToTenInAnyOrder) {
  const std::vector<double> v = {7, 3, 10, 1, 5, 9, 2, 8, 6, 4};
  const Stats s = stats_of(v);
  EXPECT_EQ(s.n, 10);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 10.0);
  EXPECT_DOUBLE_EQ(s.median, 5.5);  // mean of the middle two
  EXPECT_DOUBLE_EQ(s.p10, 1.9);     // rank 0.9: 1 + 0.9 * (2 - 1)
  EXPECT_DOUBLE_EQ(s.p90, 9.1);     // rank 8.1
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_EQ(v.front(), 7.0);  // input untouched
}

TEST(Stats, OddCountMedianIsTheMiddleSampleAndOutliersMoveOnlyTheTails) {
  const Stats s = stats_of(std::vector<double>{100.0, 2.0, 3.0, 1.0, 4.0});
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_DOUBLE_EQ(s.max, 100.0);
  EXPECT_DOUBLE_EQ(s.p90, 4.0 + 0.6 * 96.0);  // rank 3.6
  EXPECT_DOUBLE_EQ(s.p10, 1.4);               // rank 0.4
  EXPECT_DOUBLE_EQ(s.mean, 22.0);
}

TEST(Stats, OneSampleAndNone) {
  const Stats one = stats_of(std::vector<double>{4.25});
  EXPECT_EQ(one.n, 1);
  for (double v : {one.min, one.p10, one.median, one.p90, one.max, one.mean}) EXPECT_DOUBLE_EQ(v, 4.25);
  const Stats none = stats_of({});
  EXPECT_EQ(none.n, 0);
  EXPECT_EQ(none.median, 0.0);
}

TEST(Stats, PercentileEndsAreMinAndMax) {
  const std::vector<double> sorted = {1.0, 2.0, 4.0, 8.0};
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 1.0), 8.0);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 0.25), 1.75);  // rank 0.75
}

}  // namespace
}  // namespace tally::perf
