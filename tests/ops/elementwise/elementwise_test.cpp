// silu_mul, gelu_mul, softcap, scale and add: every ISA path against references, odd lengths,
// extreme inputs, rows in parallel.
#include "backend/cpu/elementwise.h"

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

double silu_mul_ref(double g, double u) { return g / (1.0 + std::exp(-g)) * u; }

TEST(SiluMul, EveryPathMatchesDoubleReference) {
  for (int64_t n : {1, 5, 8, 15, 16, 17, 31, 172, 1000, 14336 + 7}) {
    const auto gate = random_vector(n, 1 + n, 4.0f);
    const auto up = random_vector(n, 2 + n);
    for (IsaLevel isa : available_isas()) {
      std::vector<float> g = gate;
      silu_mul_row(isa, g.data(), up.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double want = silu_mul_ref(gate[i], up[i]);
        ASSERT_NEAR(g[i], want, 2e-6 * (std::fabs(want) + 1e-3))
            << "n=" << n << " i=" << i << " g=" << gate[i] << " isa=" << isa_level_name(isa);
      }
    }
  }
}

TEST(SiluMul, ExtremeInputs) {
  const std::vector<float> gate = {-1000.0f, -100.0f, -88.0f, -87.0f, -20.0f, -1e-30f, 0.0f,
                                   1e-30f,   1.0f,    20.0f,  87.0f,  88.0f,  89.0f,   100.0f,
                                   1000.0f,  3.0e38f, -3.0e38f};
  const std::vector<float> up(gate.size(), 1.0f);
  for (IsaLevel isa : available_isas()) {
    std::vector<float> g = gate;
    silu_mul_row(isa, g.data(), up.data(), static_cast<int64_t>(g.size()));
    for (size_t i = 0; i < g.size(); ++i) {
      const double want = silu_mul_ref(gate[i], 1.0);
      EXPECT_FALSE(std::isnan(g[i])) << gate[i] << " " << isa_level_name(isa);
      EXPECT_NEAR(g[i], want, 1e-6 * std::fabs(want) + 1e-30) << gate[i] << " " << isa_level_name(isa);
    }
  }
}

TEST(SiluMul, RowsInParallelMatchRowByRow) {
  const int64_t n = 173, rows = 9;
  const auto gate = random_vector(n * rows, 3, 3.0f);
  const auto up = random_vector(n * rows, 4);
  std::vector<float> want = gate;
  for (int64_t r = 0; r < rows; ++r) silu_mul_row(cpu_isa_level(), want.data() + r * n, up.data() + r * n, n);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> got = gate;
    silu_mul(got.data(), up.data(), rows, n, pool);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
  }
}

TEST(Add, EveryPathIsExact) {
  for (int64_t n : {1, 7, 8, 16, 33, 40000}) {
    const auto x = random_vector(n, 5);
    const auto y = random_vector(n, 6);
    for (IsaLevel isa : available_isas()) {
      std::vector<float> got = x;
      add_row(isa, got.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], x[i] + y[i]) << i;
    }
    ThreadPool pool(3);
    std::vector<float> got = x;
    add(got.data(), y.data(), n, pool);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], x[i] + y[i]) << i;
  }
}

TEST(AddBias, AddsTheBiasToEveryRow) {
  const int64_t n = 19, rows = 5;
  const auto x = random_vector(n * rows, 7);
  const auto bias = random_vector(n, 8);
  ThreadPool pool(2);
  std::vector<float> got = x;
  add_bias(got.data(), bias.data(), rows, n, pool);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[r * n + i], x[r * n + i] + bias[i]);
}

// HF's gelu_pytorch_tanh times up.
double gelu_mul_ref(double g, double u) {
  return 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g))) * u;
}

TEST(GeluMul, EveryPathMatchesDoubleReference) {
  for (int64_t n : {1, 5, 8, 15, 16, 17, 31, 1000, 10240 + 3}) {
    const auto gate = random_vector(n, 1 + n, 3.0f);
    const auto up = random_vector(n, 2 + n, 1.0f);
    for (IsaLevel isa : available_isas()) {
      std::vector<float> g = gate;
      gelu_mul_row(isa, g.data(), up.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double want = gelu_mul_ref(gate[i], up[i]);
        ASSERT_NEAR(g[i], want, 4e-6 * (std::fabs(want) + 1e-3))
            << "n=" << n << " i=" << i << " g=" << gate[i] << " isa=" << isa_level_name(isa);
      }
    }
  }
}

TEST(GeluMul, ExtremeInputs) {
  const std::vector<float> gate = {-1000.0f, -30.0f, -10.0f, -1e-30f, 0.0f, 1e-30f, 10.0f, 30.0f, 1000.0f,
                                   3.0e38f, -3.0e38f};
  const std::vector<float> up(gate.size(), 1.0f);
  for (IsaLevel isa : available_isas()) {
    std::vector<float> g = gate;
    gelu_mul_row(isa, g.data(), up.data(), static_cast<int64_t>(g.size()));
    for (size_t i = 0; i < g.size(); ++i) {
      const double want = gelu_mul_ref(gate[i], 1.0);
      EXPECT_FALSE(std::isnan(g[i])) << gate[i] << " " << isa_level_name(isa);
      EXPECT_NEAR(g[i], want, 1e-6 * std::fabs(want) + 1e-30) << gate[i] << " " << isa_level_name(isa);
    }
  }
}

TEST(GeluMul, RowsInParallelMatchRowByRow) {
  const int64_t n = 173, rows = 9;
  const auto gate = random_vector(n * rows, 3, 3.0f);
  const auto up = random_vector(n * rows, 4, 1.0f);
  std::vector<float> want = gate;
  for (int64_t r = 0; r < rows; ++r) gelu_mul_row(cpu_isa_level(), want.data() + r * n, up.data() + r * n, n);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> got = gate;
    gelu_mul(got.data(), up.data(), rows, n, pool);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
  }
}

// tanh through e^x loses relative precision near 0: the tolerance has an absolute part of a few
// ulp of the cap.
TEST(Softcap, EveryPathMatchesDoubleReference) {
  for (float cap : {30.0f, 50.0f, 2.0f}) {
    for (int64_t n : {1, 7, 16, 33, 40000}) {
      const auto x = random_vector(n, 5 + n, 40.0f);
      for (IsaLevel isa : available_isas()) {
        std::vector<float> got = x;
        softcap_row(isa, got.data(), cap, n);
        for (int64_t i = 0; i < n; ++i) {
          const double want = cap * std::tanh(double(x[i]) / cap);
          ASSERT_NEAR(got[i], want, 3e-7 * cap + 2e-6 * std::fabs(want))
              << "x=" << x[i] << " cap=" << cap << " isa=" << isa_level_name(isa);
        }
      }
    }
  }
  for (IsaLevel isa : available_isas()) {  // saturates at +-cap, never NaN
    std::vector<float> x = {1e30f, -1e30f, 3.0e38f, -3.0e38f, 0.0f};
    softcap_row(isa, x.data(), 30.0f, 5);
    EXPECT_EQ(x[0], 30.0f);
    EXPECT_EQ(x[1], -30.0f);
    EXPECT_EQ(x[2], 30.0f);
    EXPECT_EQ(x[3], -30.0f);
    EXPECT_EQ(x[4], 0.0f);
  }
}

TEST(Scale, EveryPathIsExactAndSplitsDoNotMatter) {
  for (int64_t n : {1, 7, 8, 16, 33, 40000}) {
    const auto x = random_vector(n, 9, 1.0f);
    const float s = std::sqrt(2560.0f);
    for (IsaLevel isa : available_isas()) {
      std::vector<float> got = x;
      scale_row(isa, got.data(), s, n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], x[i] * s) << i;
    }
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      std::vector<float> got = x;
      scale(got.data(), s, n, pool);
      std::vector<float> got2 = x;
      softcap(got2.data(), 30.0f, n, pool);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], x[i] * s) << i;
      std::vector<float> row = x;
      softcap_row(cpu_isa_level(), row.data(), 30.0f, n);
      EXPECT_EQ(0, std::memcmp(got2.data(), row.data(), n * sizeof(float))) << threads;
    }
  }
}

}  // namespace
}  // namespace tally::cpu
