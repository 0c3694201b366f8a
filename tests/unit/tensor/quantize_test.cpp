// quantize_row -> dequantize_row round trips stay within each type's documented error bound
// (quantize.h), relative to the largest magnitude of the block the bound is stated for.
#include "tensor/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <random>
#include <vector>

#include "tensor/half.h"
#include "tensor/quant_blocks.h"

namespace tally {
namespace {

// Blocks of varied character: gaussian at random scales, with outliers, one-signed, constant,
// and zero, so every branch of the scale choice runs.
std::vector<float> test_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (int64_t start = 0; start < n; start += 32) {
    const int kind = static_cast<int>(rng() % 8);
    const float scale = std::ldexp(1.0f, static_cast<int>(rng() % 16) - 8);
    for (int64_t i = start; i < std::min(n, start + 32); ++i) {
      float v = normal(rng) * scale;
      if (kind == 1 && rng() % 16 == 0) v *= 20.0f;  // outliers
      if (kind == 2) v = std::fabs(v);
      if (kind == 3) v = -std::fabs(v);
      if (kind == 4) v = scale;
      if (kind == 5) v = 0.0f;
      x[i] = v;
    }
  }
  return x;
}

std::vector<float> round_trip(DType type, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(dtype_row_bytes(type, n));
  quantize_row(type, x.data(), q.data(), n);
  std::vector<float> y(n);
  dequantize_row(type, q.data(), y.data(), n);
  return y;
}

// Through tally quantize's quantizer (the weighted scale search), with an optional importance.
std::vector<float> search_round_trip(DType type, const std::vector<float>& x, const float* importance = nullptr) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(dtype_row_bytes(type, n));
  quantize_row_weighted(type, x.data(), q.data(), n, importance);
  std::vector<float> y(n);
  dequantize_row(type, q.data(), y.data(), n);
  return y;
}

// Largest |error| / largest |x| over each `group` elements; the max over groups.
double worst_relative_error(const std::vector<float>& x, const std::vector<float>& y, int group) {
  double worst = 0.0;
  for (size_t start = 0; start < x.size(); start += group) {
    double amax = 0.0, err = 0.0;
    for (size_t i = start; i < start + group; ++i) {
      amax = std::max(amax, std::fabs(double(x[i])));
      err = std::max(err, std::fabs(double(x[i]) - double(y[i])));
    }
    if (amax == 0.0) {
      EXPECT_EQ(err, 0.0) << "a zero block must decode to zeros";
      continue;
    }
    worst = std::max(worst, err / amax);
  }
  return worst;
}

constexpr int64_t kN = 256 * 64;

TEST(Quantize, Q8_0WithinHalfStep) {
  const auto x = test_row(kN, 1);
  const auto y = round_trip(DType::kQ8_0, x);
  // Half of amax/127 (ggml's rounding, from the f32 step), plus the f16 rounding of the
  // stored step over up to 127 levels: 127 * (amax/127) * 2^-11.
  EXPECT_LE(worst_relative_error(x, y, 32), 0.5 / 127 + 1.0 / 2048);
}

TEST(Quantize, Q8_0IsIdempotent) {
  const auto x = test_row(kN, 2);
  const auto y = round_trip(DType::kQ8_0, x);
  EXPECT_EQ(round_trip(DType::kQ8_0, y), y);
}

TEST(Quantize, Q4_0WithinOneStep) {
  const auto x = test_row(kN, 3);
  const auto y = round_trip(DType::kQ4_0, x);
  // The extreme's side is within half a step (amax/8); the far side may clamp at +7.
  // (Plus the f16 rounding of the stored step over 8 levels: 2^-11 of amax.)
  EXPECT_LE(worst_relative_error(x, y, 32), 1.0 / 8 + 1.0 / 2048);
  // The extreme itself is exact up to the f16 rounding of the scale.
  for (int64_t b = 0; b < kN; b += 32) {
    const auto it = std::max_element(x.begin() + b, x.begin() + b + 32,
                                     [](float a, float c) { return std::fabs(a) < std::fabs(c); });
    EXPECT_NEAR(y[it - x.begin()], *it, std::fabs(*it) / 1024) << b;
  }
}

TEST(Quantize, Q4KWithinHalfStep) {
  const auto x = test_row(kN, 4);
  const auto y = round_trip(DType::kQ4_K, x);
  // Per super-block of largest magnitude A: a sub-block spans at most 2A plus dmin (A/63)
  // over 15 steps, rounded up by at most d (~A/440): half of that is < 0.07 A.
  EXPECT_LE(worst_relative_error(x, y, 256), 0.07);
  // On plain gaussian data the error is far from the worst case: RMS error under 0.1 sigma.
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> g(kN);
  for (auto& v : g) v = normal(rng);
  const auto gy = round_trip(DType::kQ4_K, g);
  double se = 0.0;
  for (int64_t i = 0; i < kN; ++i) se += (g[i] - gy[i]) * double(g[i] - gy[i]);
  EXPECT_LT(std::sqrt(se / kN), 0.1);
}

TEST(Quantize, Q6KWithinHalfStep) {
  const auto x = test_row(kN, 6);
  const auto y = round_trip(DType::kQ6_K, x);
  // Half of (amax_16/31 + d), d <= A/(31*127): < A/62 * 1.01.
  EXPECT_LE(worst_relative_error(x, y, 256), 1.0 / 62 * 1.01);
  // And per 16 sub-block, relative to that sub-block plus the super-block's granularity.
  for (int64_t s = 0; s < kN; s += 256) {
    double big = 0.0;
    for (int64_t i = s; i < s + 256; ++i) big = std::max(big, std::fabs(double(x[i])));
    for (int64_t j = s; j < s + 256; j += 16) {
      double amax = 0.0, err = 0.0;
      for (int64_t i = j; i < j + 16; ++i) {
        amax = std::max(amax, std::fabs(double(x[i])));
        err = std::max(err, std::fabs(double(x[i]) - y[i]));
      }
      EXPECT_LE(err, 0.5 * (amax / 31 + big / (31 * 127) * 1.01) * 1.001 + 1e-30) << j;
    }
  }
}

TEST(Quantize, Q4KUsesHighScaleBits) {
  // Sub-blocks 4..7 with large ranges need scales >= 16, stored in the packed top bits.
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = (i / 32 + 1) * ((i % 7) - 3.0f);
  const auto y = round_trip(DType::kQ4_K, x);
  EXPECT_LE(worst_relative_error(x, y, 32), 0.07 * 8);
  std::vector<uint8_t> q(144);
  quantize_row(DType::kQ4_K, x.data(), q.data(), 256);
  int sc = 0, m = 0;
  q4k_scale_min(q.data() + 4, 7, &sc, &m);
  EXPECT_GE(sc, 16);
  EXPECT_GE(m, 16);
}

// Bounds relative to the largest |x| of the group: half a step, or a whole one where a side
// may clamp (the 1% covers the f16 and integer rounding-up of the scales).
struct RoundTripCase {
  DType type;
  int group;     // elements the bound is stated for
  double bound;  // largest error / largest |x| of the group
};

TEST(Quantize, LowBitTypesWithinTheirStep) {
  const RoundTripCase cases[] = {
      // Extreme's side within half of amax/16, the other side may clamp at +15: one step
      // (plus the f16 rounding of the step over 16 levels, 2^-11 of amax).
      {DType::kQ5_0, 32, 1.0 / 16 + 1.0 / 2048},
      // Level 0 is the minimum: half of (max - min)/15 (or /31) <= amax/15 (amax/31), plus
      // the f16 rounding of the minimum (2^-11 of amax) and of the step over the levels
      // (2^-11 of the span, <= 2 amax).
      {DType::kQ4_1, 32, 1.0 / 15 + 3.0 / 2048},
      {DType::kQ5_1, 32, 1.0 / 31 + 3.0 / 2048},
      // As Q4_K with 31 steps: half of (2A + A/63)/31 plus the scale's rounding.
      {DType::kQ5_K, 256, 0.036},
      // Symmetric 3 steps per 16: half of (A/3 + d), d <= A/(3*31).
      {DType::kQ3_K, 256, (1.0 / 6 + 1.0 / 186) * 1.01},
      // 3 steps over a span of up to 2A + dmin (A/15), plus d (<= that over 15): < 0.37 A.
      {DType::kQ2_K, 256, 0.37},
      // The extreme maps to -127; the far side may clamp at +113 (14 steps of amax/127),
      // the widest gap of the grid is 24 (12 steps); IQ4_XS's step may grow by d <= A/(127*31).
      {DType::kIQ4_NL, 32, 14.0 / 127 * (1 + 1.0 / 1024)},
      {DType::kIQ4_XS, 256, 14.0 / 127 * (1 + 1.0 / 31) * 1.001},
  };
  uint32_t seed = 10;
  for (const RoundTripCase& c : cases) {
    const auto x = test_row(kN, ++seed);
    const auto y = round_trip(c.type, x);
    EXPECT_LE(worst_relative_error(x, y, c.group), c.bound) << dtype_name(c.type);
  }
}

TEST(Quantize, MoreBitsMeanLessError) {
  // On gaussian data each type's RMS error is below the next coarser type's (Q4_1 is not
  // below Q4_0 there: on symmetric data its step (max - min)/15 exceeds Q4_0's amax/8).
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> g(kN);
  for (auto& v : g) v = normal(rng);
  auto rms = [&](DType type) {
    const auto y = round_trip(type, g);
    double se = 0.0;
    for (int64_t i = 0; i < kN; ++i) se += (g[i] - y[i]) * double(g[i] - y[i]);
    return std::sqrt(se / kN);
  };
  EXPECT_LT(rms(DType::kQ3_K), rms(DType::kQ2_K));
  EXPECT_LT(rms(DType::kQ4_K), rms(DType::kQ3_K));
  EXPECT_LT(rms(DType::kQ5_K), rms(DType::kQ4_K));
  EXPECT_LT(rms(DType::kQ6_K), rms(DType::kQ5_K));
  EXPECT_LT(rms(DType::kQ5_0), rms(DType::kQ4_1));
  EXPECT_LT(rms(DType::kIQ4_NL), rms(DType::kQ4_0));  // the grid fits bell-shaped data
  EXPECT_LT(rms(DType::kQ5_1), rms(DType::kQ4_1));
  EXPECT_LT(rms(DType::kQ8_0), rms(DType::kQ5_1));
}

// docs/quantization.md's RMSE table: each type's round-trip RMSE on N(0, 1) data through
// tally quantize's quantizer (quantize_row_weighted without an importance matrix) is at most
// the figure there (rounded up in the last digit), and within 10% of it, so the table stays
// true when a quantizer changes; and never above the covering reference quantize_row's.
TEST(Quantize, RmsErrorPerType) {
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> g(256 * 256);
  for (auto& v : g) v = normal(rng);
  const std::pair<DType, double> documented[] = {
      {DType::kQ8_0, 0.00535},
      {DType::kQ4_0, 0.0860},
      {DType::kQ4_1, 0.0783},
      {DType::kQ5_0, 0.0426},
      {DType::kQ5_1, 0.0378},
      {DType::kQ2_K, 0.266},
      {DType::kQ3_K, 0.146},
      {DType::kQ4_K, 0.0702},
      {DType::kQ5_K, 0.0348},
      {DType::kQ6_K, 0.0170},
      {DType::kIQ4_NL, 0.0740},
      {DType::kIQ4_XS, 0.0747}
  };
  for (const auto& [type, rmse] : documented) {
    const auto rmse_of = [&g](const std::vector<float>& y) {
      double se = 0.0;
      for (size_t i = 0; i < g.size(); ++i) se += (g[i] - y[i]) * double(g[i] - y[i]);
      return std::sqrt(se / static_cast<double>(g.size()));
    };
    const double got = rmse_of(search_round_trip(type, g));
    const double reference = rmse_of(round_trip(type, g));
    std::printf("rmse %-7s %.5f (quantize_row %.5f)\n", std::string(dtype_name(type)).c_str(), got, reference);
    EXPECT_LE(got, reference) << dtype_name(type);
    EXPECT_LE(got, rmse) << dtype_name(type);
    EXPECT_GE(got, rmse * 0.9) << dtype_name(type);
  }
}

// With an importance matrix the scale search trades error on unimportant columns for error
// on important ones: the importance-weighted squared error must fall for every type that
// takes one.
TEST(Quantize, ImportanceLowersWeightedError) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  constexpr int64_t kCols = 512, kRows = 32;
  std::vector<float> importance(kCols);
  for (int64_t i = 0; i < kCols; ++i) importance[i] = (i % 7 == 0) ? 50.0f : 0.5f + 0.01f * static_cast<float>(i % 13);
  std::vector<float> row(kCols);
  for (DType type : {DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL,
                     DType::kIQ4_XS, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1}) {
    double plain = 0.0, weighted = 0.0;
    for (int64_t r = 0; r < kRows; ++r) {
      for (auto& v : row) v = normal(rng);
      const auto y0 = search_round_trip(type, row);
      const auto y1 = search_round_trip(type, row, importance.data());
      for (int64_t i = 0; i < kCols; ++i) {
        plain += importance[i] * double(row[i] - y0[i]) * (row[i] - y0[i]);
        weighted += importance[i] * double(row[i] - y1[i]) * (row[i] - y1[i]);
      }
    }
    std::printf("weighted error %-7s without %.5f with importance %.5f\n", std::string(dtype_name(type)).c_str(),
                plain, weighted);
    EXPECT_LT(weighted, plain * 0.95) << dtype_name(type);
  }
}

// Without importance, Q4_0..Q5_1 stay ggml's reference bytes (tally quantize's path).
TEST(Quantize, WeightedWithoutImportanceKeepsReferenceBytes) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(256);
  for (auto& v : x) v = normal(rng);
  for (DType type : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1}) {
    std::vector<uint8_t> a(dtype_row_bytes(type, 256)), b(a.size());
    quantize_row(type, x.data(), a.data(), 256);
    quantize_row_weighted(type, x.data(), b.data(), 256, nullptr);
    EXPECT_EQ(a, b) << dtype_name(type);
  }
}

TEST(Quantize, Q3KUsesHighScaleBits) {
  // Sub-blocks of growing range: the larger ones need scales s - 32 >= 16 (top bits set).
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = (i / 16 + 1) * ((i % 7) - 3.0f);
  const auto y = round_trip(DType::kQ3_K, x);
  EXPECT_LE(worst_relative_error(x, y, 256), (1.0 / 6 + 1.0 / 186) * 1.01);
  std::vector<uint8_t> q(110);
  quantize_row(DType::kQ3_K, x.data(), q.data(), 256);
  EXPECT_GE(q3k_scale(q.data() + 96, 15) - 32, 16);
  EXPECT_LT(q3k_scale(q.data() + 96, 0) - 32, 16);
}

TEST(Quantize, HalfTypesRoundToNearest) {
  const auto x = test_row(4096, 7);
  const auto f16 = round_trip(DType::kF16, x);
  const auto bf16 = round_trip(DType::kBF16, x);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(f16[i], f16_to_f32(f32_to_f16(x[i])));
    EXPECT_LE(std::fabs(bf16[i] - x[i]), std::fabs(x[i]) * std::ldexp(1.0, -8)) << i;
  }
  EXPECT_EQ(round_trip(DType::kF32, x), x);
}

}  // namespace
}  // namespace tally
