// Seeded synthetic values: deterministic per (stream, row, column), independent of how a row
// is cut, and normally distributed with the asked mean and std.
#include "synth/synthetic_values.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace tally::synth {
namespace {

std::vector<float> row(uint64_t stream, int64_t r, int64_t n, float mean = 0.0f, float std = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  synthetic_fill_row(stream, r, mean, std, v.data(), n);
  return v;
}

TEST(SyntheticValues, SameInputsSameValuesAndShortRowsArePrefixes) {
  const uint64_t s = synthetic_stream(42, "blk.0.attn_q.weight");
  EXPECT_EQ(s, synthetic_stream(42, "blk.0.attn_q.weight"));
  EXPECT_EQ(row(s, 7, 100), row(s, 7, 100));
  const auto longer = row(s, 7, 103);
  for (int64_t n : {1, 2, 3, 5, 6, 7, 99}) {
    const auto shorter = row(s, 7, n);
    EXPECT_TRUE(std::equal(shorter.begin(), shorter.end(), longer.begin())) << n;
  }
}

TEST(SyntheticValues, StreamsDifferBySeedNameAndRow) {
  const uint64_t a = synthetic_stream(1, "blk.0.attn_q.weight");
  EXPECT_NE(a, synthetic_stream(2, "blk.0.attn_q.weight"));
  EXPECT_NE(a, synthetic_stream(1, "blk.0.attn_k.weight"));
  EXPECT_NE(a, synthetic_stream(1, "blk.1.attn_q.weight"));
  EXPECT_NE(row(a, 0, 64), row(a, 1, 64));
  EXPECT_NE(row(a, 0, 64), row(synthetic_stream(2, "blk.0.attn_q.weight"), 0, 64));
}

TEST(SyntheticValues, MeanStdAndTailsOfANormal) {
  const uint64_t s = synthetic_stream(3, "t");
  double sum = 0.0, sum_sq = 0.0;
  int64_t n = 0, beyond_2sigma = 0;
  float lo = 0.0f, hi = 0.0f;
  for (int64_t r = 0; r < 64; ++r) {
    for (float v : row(s, r, 4096, 1.0f, 0.02f)) {
      sum += v;
      sum_sq += (v - 1.0) * (v - 1.0);
      beyond_2sigma += std::abs(v - 1.0f) > 0.04f;
      lo = std::min(lo, v - 1.0f);
      hi = std::max(hi, v - 1.0f);
      ++n;
    }
  }
  const double mean = sum / n;
  const double std = std::sqrt(sum_sq / n);
  EXPECT_NEAR(mean, 1.0, 3 * 0.02 / std::sqrt(n));
  EXPECT_NEAR(std, 0.02, 0.0002);
  EXPECT_NEAR(static_cast<double>(beyond_2sigma) / n, 0.0455, 0.003);  // P(|z| > 2)
  EXPECT_GT(hi, 0.02f * 3.5f);   // the table reaches past 4 sigma
  EXPECT_LT(hi, 0.02f * 4.5f);
  EXPECT_NEAR(lo, -hi, 1e-6);    // symmetric table
  EXPECT_NEAR(synthetic_table_std(), 1.0, 0.001);
}

}  // namespace
}  // namespace tally::synth
