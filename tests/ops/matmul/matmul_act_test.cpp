// Activation quantization: the AVX2 version writes the scalar version's bytes exactly (the
// premise of bit-identical paths), on ordinary rows and on rows with NaN, infinities, zeros,
// -0, subnormals, huge values and exact halves (round to nearest even).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/matmul_kernels.h"
#include "base/cpu_features.h"
#include "matmul_test_util.h"

namespace tally::cpu::detail {
namespace {

std::vector<std::vector<float>> rows(int64_t n) {
  std::vector<std::vector<float>> r;
  r.push_back(test::make_acts(1, n, 3));
  std::vector<float> edge(n, 0.0f);
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {std::nanf(""), inf,  -inf,  -0.0f,  1e-40f,  -3e38f, 3e38f,
                            0.5f,          1.5f, -2.5f, 127.0f, -127.0f, 63.5f,  1e-7f};
  for (int64_t i = 0; i < n; ++i) edge[i] = specials[(i * 7) % 14] * (i % 3 == 0 ? 1.0f : 0.25f);
  r.push_back(edge);
  r.push_back(std::vector<float>(n, 0.0f));  // d = 0
  std::vector<float> halves(n);  // with amax 127 the scale is 1: x.5 values round to even
  for (int64_t i = 0; i < n; ++i)
    halves[i] = i % 32 == 0 ? 127.0f : static_cast<float>(i % 64) * 0.5f - 16.0f;
  r.push_back(halves);
  std::vector<float> nan_only(n, std::nanf(""));
  r.push_back(nan_only);
  return r;
}

void expect_same(ActQuantFn a, ActQuantFn b, int64_t n, int64_t n_scales, int64_t n_sums) {
  for (const auto& x : rows(n)) {
    std::vector<int8_t> qa(n), qb(n);
    std::vector<float> da(n_scales), db(n_scales);
    std::vector<int16_t> sa(n_sums), sb(n_sums);
    a(x.data(), n, qa.data(), da.data(), sa.data());
    b(x.data(), n, qb.data(), db.data(), sb.data());
    EXPECT_EQ(0, std::memcmp(qa.data(), qb.data(), n));
    EXPECT_EQ(0, std::memcmp(da.data(), db.data(), n_scales * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(sa.data(), sb.data(), n_sums * sizeof(int16_t)));
    for (int8_t v : qa) ASSERT_TRUE(v >= -127 && v <= 127);
  }
}

TEST(MatmulActQuant, Avx2BytesEqualScalar) {
  if (cpu_isa_level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 on this CPU";
  expect_same(act_quantize_row32, act_quantize_row32_avx2, 1024, 1024 / 32, 1024 / 32);
  expect_same(act_quantize_row_k, act_quantize_row_k_avx2, 1024, 1024 / 256, 1024 / 16);
}

TEST(MatmulActQuant, HalvesRoundToEvenAndNanIsMinus127) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // scale 1
  x[1] = 2.5f;
  x[2] = -3.5f;
  x[3] = std::nanf("");
  std::vector<int8_t> q(32);
  float d = 0;
  int16_t sum = 0;
  act_quantize_row32(x.data(), 32, q.data(), &d, &sum);
  EXPECT_EQ(d, 1.0f);
  EXPECT_EQ(q[1], 2);
  EXPECT_EQ(q[2], -4);
  EXPECT_EQ(q[3], -127);
  EXPECT_EQ(sum, 127 + 2 - 4 - 127);
}

}  // namespace
}  // namespace tally::cpu::detail
