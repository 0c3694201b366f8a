// rmsnorm: every ISA path against the scalar path and a double-precision reference.
#include "backend/cpu/rmsnorm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tally::cpu {
namespace {

std::vector<IsaLevel> available_isas() {
  std::vector<IsaLevel> out;
  for (IsaLevel l : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512})
    if (l <= cpu_isa_level()) out.push_back(l);
  return out;
}

std::vector<float> random_vector(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

constexpr float kEps = 1e-5f;

TEST(RmsNorm, EveryPathMatchesDoubleReference) {
  for (int64_t n : {1, 3, 7, 8, 9, 15, 16, 17, 33, 64, 100, 128, 172, 4099}) {
    const auto x = random_vector(n, 1 + n, 2.0f);
    const auto w = random_vector(n, 2 + n);
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    const double scale = 1.0 / std::sqrt(ss / n + kEps);
    for (IsaLevel isa : available_isas()) {
      std::vector<float> out(n);
      rmsnorm_row(isa, x.data(), w.data(), out.data(), n, kEps);
      for (int64_t i = 0; i < n; ++i) {
        const double want = double(w[i]) * x[i] * scale;
        ASSERT_NEAR(out[i], want, 1e-5 * (1 + std::fabs(want)))
            << "n=" << n << " i=" << i << " isa=" << isa_level_name(isa);
      }
    }
  }
}

TEST(RmsNorm, ScalarPathIsRunCExpression) {
  const int64_t n = 64;
  const auto x = random_vector(n, 7);
  const auto w = random_vector(n, 8);
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  ss /= n;
  ss += kEps;
  ss = 1.0f / sqrtf(ss);
  std::vector<float> out(n);
  rmsnorm_row(IsaLevel::kScalar, x.data(), w.data(), out.data(), n, kEps);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(out[i], w[i] * (ss * x[i])) << i;
}

TEST(RmsNorm, RowsAreIndependentOfBatchAndThreads) {
  const int64_t n = 77;
  const int64_t rows = 13;
  const auto x = random_vector(n * rows, 3);
  const auto w = random_vector(n, 4);
  std::vector<float> single(n * rows);
  for (int64_t r = 0; r < rows; ++r)
    rmsnorm_row(cpu_isa_level(), x.data() + r * n, w.data(), single.data() + r * n, n, kEps);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> out(n * rows);
    rmsnorm(x.data(), w.data(), out.data(), rows, n, kEps, pool);
    EXPECT_EQ(0, std::memcmp(out.data(), single.data(), out.size() * sizeof(float))) << threads;
    // In place gives the same bits.
    std::vector<float> inplace = x;
    rmsnorm(inplace.data(), w.data(), inplace.data(), rows, n, kEps, pool);
    EXPECT_EQ(0, std::memcmp(inplace.data(), single.data(), out.size() * sizeof(float)));
  }
}

TEST(RmsNorm, ZeroRowGivesZeros) {
  std::vector<float> x(24, 0.0f), w(24, 1.0f), out(24, 5.0f);
  for (IsaLevel isa : available_isas()) {
    rmsnorm_row(isa, x.data(), w.data(), out.data(), 24, kEps);
    for (float v : out) EXPECT_EQ(v, 0.0f);
  }
}

}  // namespace
}  // namespace tally::cpu
