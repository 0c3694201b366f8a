// rope: both pair layouts, every ISA path bit-identical to the scalar path, and the scalar
// path bit-identical to llama2.c run.c's expression.
#include "backend/cpu/rope.h"

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

std::vector<float> random_vector(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// run.c's frequencies: 1 / 10000^(2i / rot_dim), exponent as a float division.
std::vector<float> runc_freqs(int64_t rot_dim) {
  std::vector<float> f(rot_dim / 2);
  for (int64_t i = 0; i < rot_dim / 2; ++i)
    f[i] = 1.0f / powf(10000.0f, static_cast<float>(2 * i) / static_cast<float>(rot_dim));
  return f;
}

struct Case {
  int64_t n_heads, head_dim, rot_dim;
  RopeLayout layout;
};

// Applies rope to [n_tokens][n_heads][head_dim] with the given ISA path.
std::vector<float> apply(IsaLevel isa, const Case& c, const std::vector<int32_t>& pos,
                         std::vector<float> x) {
  const auto freqs = runc_freqs(c.rot_dim);
  const int64_t n = static_cast<int64_t>(pos.size());
  std::vector<float> cos(n * c.rot_dim), sin(n * c.rot_dim);
  rope_table(pos.data(), n, freqs.data(), c.rot_dim, c.layout, cos.data(), sin.data());
  const RopeShape shape{c.n_heads, c.head_dim, c.rot_dim, c.layout};
  for (int64_t t = 0; t < n; ++t)
    rope_row(isa, shape, cos.data() + t * c.rot_dim, sin.data() + t * c.rot_dim,
             x.data() + t * c.n_heads * c.head_dim);
  return x;
}

const Case kCases[] = {
    {8, 8, 8, RopeLayout::kAdjacent},    {4, 64, 64, RopeLayout::kAdjacent},
    {3, 128, 128, RopeLayout::kAdjacent}, {2, 80, 80, RopeLayout::kAdjacent},
    {3, 128, 64, RopeLayout::kAdjacent}, {5, 10, 6, RopeLayout::kAdjacent},
    {8, 8, 8, RopeLayout::kNeox},        {4, 64, 64, RopeLayout::kNeox},
    {3, 128, 128, RopeLayout::kNeox},    {2, 80, 80, RopeLayout::kNeox},
    {3, 128, 64, RopeLayout::kNeox},     {5, 10, 6, RopeLayout::kNeox},
    {2, 96, 96, RopeLayout::kNeox},
};

TEST(Rope, SimdPathsAreBitIdenticalToScalar) {
  const std::vector<int32_t> pos = {0, 1, 2, 17, 255, 511, 4095, 100000};
  for (const Case& c : kCases) {
    const auto x = random_vector(static_cast<int64_t>(pos.size()) * c.n_heads * c.head_dim, 5);
    const auto want = apply(IsaLevel::kScalar, c, pos, x);
    for (IsaLevel isa : available_isas()) {
      const auto got = apply(isa, c, pos, x);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << "head_dim=" << c.head_dim << " rot=" << c.rot_dim << " isa=" << isa_level_name(isa)
          << " neox=" << (c.layout == RopeLayout::kNeox);
    }
  }
}

// The pair (a, b) rotated as run.c writes it.
void runc_rotate(float& a, float& b, int32_t pos, float freq) {
  const float val = pos * freq;
  const float fcr = cosf(val);
  const float fci = sinf(val);
  const float v0 = a;
  const float v1 = b;
  a = v0 * fcr - v1 * fci;
  b = v0 * fci + v1 * fcr;
}

TEST(Rope, MatchesRunCBitForBit) {
  const std::vector<int32_t> pos = {0, 3, 200, 511};
  for (const Case& c : kCases) {
    const auto x = random_vector(static_cast<int64_t>(pos.size()) * c.n_heads * c.head_dim, 9);
    const auto freqs = runc_freqs(c.rot_dim);
    std::vector<float> want = x;
    for (size_t t = 0; t < pos.size(); ++t)
      for (int64_t h = 0; h < c.n_heads; ++h) {
        float* head = want.data() + (t * c.n_heads + h) * c.head_dim;
        for (int64_t i = 0; i < c.rot_dim / 2; ++i) {
          if (c.layout == RopeLayout::kAdjacent)
            runc_rotate(head[2 * i], head[2 * i + 1], pos[t], freqs[i]);
          else
            runc_rotate(head[i], head[i + c.rot_dim / 2], pos[t], freqs[i]);
        }
      }
    for (IsaLevel isa : available_isas()) {
      const auto got = apply(isa, c, pos, x);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << "head_dim=" << c.head_dim << " isa=" << isa_level_name(isa);
    }
  }
}

TEST(Rope, PositionZeroIsIdentityAndDimsPastRotDimPassThrough) {
  const Case c{2, 16, 8, RopeLayout::kNeox};
  const auto x = random_vector(2 * 2 * 16, 11);
  const auto got = apply(cpu_isa_level(), c, {0, 7}, x);
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(got[i], x[i]);  // token 0, position 0
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t d = 8; d < 16; ++d) EXPECT_EQ(got[32 + h * 16 + d], x[32 + h * 16 + d]);
  bool rotated = false;
  for (int64_t d = 0; d < 8; ++d) rotated |= got[32 + d] != x[32 + d];
  EXPECT_TRUE(rotated);
}

TEST(Rope, PoolVersionMatchesRows) {
  const Case c{4, 64, 64, RopeLayout::kAdjacent};
  std::vector<int32_t> pos(37);
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i * 3);
  const auto x = random_vector(37 * 4 * 64, 13);
  const auto want = apply(cpu_isa_level(), c, pos, x);
  const auto freqs = runc_freqs(64);
  std::vector<float> cos(37 * 64), sin(37 * 64);
  rope_table(pos.data(), 37, freqs.data(), 64, c.layout, cos.data(), sin.data());
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    std::vector<float> got = x;
    rope({4, 64, 64, c.layout}, cos.data(), sin.data(), 37, got.data(), pool);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
  }
}

}  // namespace
}  // namespace tally::cpu
