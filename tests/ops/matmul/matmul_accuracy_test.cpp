// Each weight type on each ISA path this CPU has, against the double-precision reference,
// within the bound that activation quantization and f32 rounding allow (matmul_test_util.h);
// and every path bit-identical to the scalar one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/matmul.h"
#include "matmul_test_util.h"

namespace tally::cpu {
namespace {

using test::error_bounds;
using test::make_acts;
using test::make_weights;

struct Case {
  DType type;
  std::vector<int64_t> n_ins;
};

// n_in: a few multiples of the block; for float types also lengths that are not a multiple
// of any vector width (the scalar tail of the reduction).
const std::vector<Case> kCases = {
    {DType::kF32, {1, 7, 8, 67, 256}},  {DType::kF16, {3, 16, 67, 200}},
    {DType::kBF16, {5, 64, 67, 136}},   {DType::kQ8_0, {32, 96, 256, 768}},
    {DType::kQ4_0, {32, 96, 256, 768}}, {DType::kQ4_K, {256, 512, 1280}},
    {DType::kQ6_K, {256, 512, 1280}},
    // The 32-block row kernels gather 8 blocks at a time: 1, 3, 8 and 25 blocks cover the
    // lone tail, whole groups and a group plus a tail.
    {DType::kQ4_1, {32, 96, 256, 800}}, {DType::kQ5_0, {32, 96, 256, 800}},
    {DType::kQ5_1, {32, 96, 256, 800}}, {DType::kQ2_K, {256, 512, 2304}},
    {DType::kQ3_K, {256, 512, 2304}},   {DType::kQ5_K, {256, 512, 2304}},
    {DType::kIQ4_NL, {32, 96, 256, 800}}, {DType::kIQ4_XS, {256, 512, 2304}},
};

const IsaLevel kLevels[] = {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512};

std::string label(DType type, IsaLevel level, int64_t n_in, int64_t n_out, int64_t n_tokens) {
  return std::string(dtype_name(type)) + " " + isa_level_name(level) +
         " n_in=" + std::to_string(n_in) + " n_out=" + std::to_string(n_out) +
         " n_tokens=" + std::to_string(n_tokens);
}

TEST(MatmulAccuracy, EveryTypeAndPathWithinBound) {
  ThreadPool pool(2);
  int paths_run = 0;
  for (const Case& c : kCases) {
    for (int64_t n_in : c.n_ins) {
      // 37 rows: not a multiple of the 16-row task chunk nor of the 4-row kernel groups.
      const int64_t n_out = 37, n_tokens = 3;
      const auto w = make_weights(c.type, n_out, n_in, static_cast<uint32_t>(n_in));
      const auto x = make_acts(n_tokens, n_in, static_cast<uint32_t>(n_in + 1));
      std::vector<float> ref(n_tokens * n_out);
      matmul_reference(w.view, x.data(), n_tokens, ref.data());
      const auto bound = error_bounds(w.view, x.data(), n_tokens);
      for (IsaLevel level : kLevels) {
        std::vector<float> y(n_tokens * n_out, NAN);
        if (!matmul_with_isa(level, w.view, x.data(), n_tokens, y.data(), pool)) continue;
        ++paths_run;
        for (int64_t i = 0; i < n_tokens * n_out; ++i) {
          ASSERT_LE(std::fabs(double(y[i]) - ref[i]), bound[i])
              << label(c.type, level, n_in, n_out, n_tokens) << " at " << i << ": " << y[i]
              << " vs " << ref[i];
        }
      }
    }
  }
  EXPECT_GT(paths_run, 0);
}

TEST(MatmulAccuracy, ActivationQuantizationWithinHalfStep) {
  // The premise of error_bounds: each activation is off by at most half its block's step.
  for (DType type : {DType::kQ8_0, DType::kQ6_K}) {
    const int64_t n_in = 1024;
    const auto x = make_acts(2, n_in, 9);
    const auto xq = test::dequantized_acts(type, x, n_in);
    const int64_t blk = test::act_block(type);
    for (int64_t b = 0; b < 2 * n_in; b += blk) {
      float amax = 0.0f;
      for (int64_t k = b; k < b + blk; ++k) amax = std::max(amax, std::fabs(x[k]));
      for (int64_t k = b; k < b + blk; ++k)
        ASSERT_LE(std::fabs(x[k] - xq[k]), amax / 127 * 0.5 * (1 + 1e-6)) << k;
    }
  }
}

TEST(MatmulAccuracy, TightAgainstQuantizedActivations) {
  // Against the reference on the activations as quantized, only f32 rounding separates the
  // kernels from the exact value: a layout or scale bug cannot hide in the quantization
  // error allowance.
  ThreadPool pool(2);
  for (const Case& c : kCases) {
    for (int64_t n_in : c.n_ins) {
      const int64_t n_out = 23, n_tokens = 2;
      const auto w = make_weights(c.type, n_out, n_in, static_cast<uint32_t>(n_in + 7));
      const auto x = make_acts(n_tokens, n_in, 8);
      const auto xq = test::dequantized_acts(c.type, x, n_in);
      std::vector<float> ref(n_tokens * n_out);
      matmul_reference(w.view, xq.data(), n_tokens, ref.data());
      const auto bound = test::rounding_bounds(w.view, xq.data(), n_tokens);
      for (IsaLevel level : kLevels) {
        std::vector<float> y(n_tokens * n_out, NAN);
        if (!matmul_with_isa(level, w.view, x.data(), n_tokens, y.data(), pool)) continue;
        for (int64_t i = 0; i < n_tokens * n_out; ++i)
          ASSERT_LE(std::fabs(double(y[i]) - ref[i]), bound[i])
              << label(c.type, level, n_in, n_out, n_tokens) << " at " << i;
      }
    }
  }
}

TEST(MatmulAccuracy, PathsAreBitIdenticalToScalar) {
  ThreadPool pool(3);
  for (const Case& c : kCases) {
    for (int64_t n_in : c.n_ins) {
      const int64_t n_out = 21, n_tokens = 5;
      const auto w = make_weights(c.type, n_out, n_in, 17);
      const auto x = make_acts(n_tokens, n_in, 18);
      std::vector<float> scalar(n_tokens * n_out);
      ASSERT_TRUE(
          matmul_with_isa(IsaLevel::kScalar, w.view, x.data(), n_tokens, scalar.data(), pool));
      for (IsaLevel level : {IsaLevel::kAvx2, IsaLevel::kAvx512}) {
        std::vector<float> y(n_tokens * n_out);
        if (!matmul_with_isa(level, w.view, x.data(), n_tokens, y.data(), pool)) continue;
        EXPECT_EQ(0, std::memcmp(y.data(), scalar.data(), y.size() * sizeof(float)))
            << label(c.type, level, n_in, n_out, n_tokens);
      }
    }
  }
}

// Every path by name, so the kernel tables a level may choose between (plain AVX2 and AVX2 with
// AVX-VNNI on a CPU that has both) are each checked, at one token (decode's kernels) and five.
TEST(MatmulAccuracy, EveryNamedPathIsBitIdenticalToScalar) {
  ThreadPool pool(2);
  for (const Case& c : kCases) {
    const int64_t n_in = c.n_ins.back(), n_out = 19;
    const auto w = make_weights(c.type, n_out, n_in, 23);
    for (int64_t n_tokens : {1, 5}) {
      const auto x = make_acts(n_tokens, n_in, 24);
      std::vector<float> scalar(n_tokens * n_out);
      ASSERT_TRUE(matmul_with_path("scalar", w.view, x.data(), n_tokens, scalar.data(), pool));
      for (const std::string& path : matmul_path_names()) {
        std::vector<float> y(n_tokens * n_out, NAN);
        ASSERT_TRUE(matmul_with_path(path, w.view, x.data(), n_tokens, y.data(), pool));
        EXPECT_EQ(0, std::memcmp(y.data(), scalar.data(), y.size() * sizeof(float)))
            << dtype_name(c.type) << " on " << path << " n_in=" << n_in
            << " n_tokens=" << n_tokens;
      }
    }
  }
  EXPECT_FALSE(matmul_with_path("no-such-path", make_weights(DType::kF32, 1, 8, 1).view,
                                make_acts(1, 8, 1).data(), 1, nullptr, pool));
}

TEST(MatmulAccuracy, PaddedRowsAndDefaultPath) {
  ThreadPool pool(2);
  for (const Case& c : kCases) {
    const int64_t n_in = c.n_ins.back(), n_out = 19, n_tokens = 2;
    const auto w = make_weights(c.type, n_out, n_in, 5, /*pad_bytes=*/36);
    const auto x = make_acts(n_tokens, n_in, 6);
    std::vector<float> y(n_tokens * n_out), scalar(n_tokens * n_out);
    matmul(w.view, x.data(), n_tokens, y.data(), pool);
    ASSERT_TRUE(
        matmul_with_isa(IsaLevel::kScalar, w.view, x.data(), n_tokens, scalar.data(), pool));
    EXPECT_EQ(0, std::memcmp(y.data(), scalar.data(), y.size() * sizeof(float)))
        << dtype_name(c.type) << " on " << matmul_path_name();
  }
}

TEST(MatmulAccuracy, ExactSmallF32) {
  // Integers: every path must give the exact product.
  const float wv[2][3] = {{1, 2, 3}, {-4, 5, 0.5f}};
  const float x[2][3] = {{1, 1, 1}, {2, -1, 4}};
  const WeightMatrix w{DType::kF32, 3, 2, reinterpret_cast<const uint8_t*>(wv), 12};
  ThreadPool pool(1);
  for (IsaLevel level : kLevels) {
    float y[2][2] = {};
    if (!matmul_with_isa(level, w, &x[0][0], 2, &y[0][0], pool)) continue;
    EXPECT_EQ(y[0][0], 6.0f);
    EXPECT_EQ(y[0][1], 1.5f);
    EXPECT_EQ(y[1][0], 12.0f);
    EXPECT_EQ(y[1][1], -11.0f);
  }
}

}  // namespace
}  // namespace tally::cpu
