// Rope frequencies: run.c's base formula, linear scaling, rope_freqs.weight factors and llama3
// scaling against hand-computed values.
#include "model/rope_freqs.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/model.h"
#include "tiny_model.h"

namespace tally_test {
namespace {

using tally::ModelConfig;
using tally::RopeScalingType;

ModelConfig rope_config(int64_t rope_dim, float base) {
  ModelConfig c;
  c.rope_dim = rope_dim;
  c.head_dim = rope_dim;
  c.rope_freq_base = base;
  return c;
}

TEST(RopeFreqs, BaseFrequenciesAreRunCs) {
  const auto c = rope_config(64, 10000.0f);
  const auto f = tally::rope_frequencies(c, {});
  ASSERT_EQ(f.size(), 32u);
  for (int i = 0; i < 32; ++i) {
    const int head_dim = 2 * i;  // run.c: i % head_size over even i
    EXPECT_EQ(f[i], 1.0f / powf(10000.0f, head_dim / (float)64)) << i;
  }
  EXPECT_EQ(f[0], 1.0f);
}

TEST(RopeFreqs, LinearScalingDividesEveryFrequency) {
  auto c = rope_config(8, 10000.0f);
  c.rope_scaling.type = RopeScalingType::kLinear;
  c.rope_scaling.factor = 4.0f;
  const auto f = tally::rope_frequencies(c, {});
  EXPECT_FLOAT_EQ(f[0], 0.25f);
  EXPECT_FLOAT_EQ(f[1], 0.025f);
  EXPECT_FLOAT_EQ(f[3], 0.00025f);
}

// rope_dim 8, base 10000: frequencies 1, 0.1, 0.01, 0.001 (wavelengths 6.28, 62.8, 628, 6283).
// original context 1024, low 1, high 4, factor 8: waves above 1024 are divided by 8, below
// 256 kept; 628.3 is in between: s = (1024 / 628.3185 - 1) / 3 = 0.2099155,
// f = (1 - s) * 0.01 / 8 + s * 0.01 = 0.00308676.
TEST(RopeFreqs, Llama3ScalingHandComputed) {
  auto c = rope_config(8, 10000.0f);
  c.rope_scaling = {RopeScalingType::kLlama3, 8.0f, 1024, 1.0f, 4.0f};
  const auto f = tally::rope_frequencies(c, {});
  ASSERT_EQ(f.size(), 4u);
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_FLOAT_EQ(f[1], 0.1f);
  EXPECT_NEAR(f[2], 0.00308676f, 1e-8);
  EXPECT_FLOAT_EQ(f[3], 0.000125f);
}

TEST(RopeFreqs, FactorTensorDividesAndReplacesLlama3Computation) {
  auto c = rope_config(8, 10000.0f);
  c.rope_scaling = {RopeScalingType::kLlama3, 8.0f, 1024, 1.0f, 4.0f};
  const std::vector<float> factors = {1.0f, 2.0f, 4.0f, 8.0f};
  const auto f = tally::rope_frequencies(c, factors);
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_FLOAT_EQ(f[1], 0.05f);
  EXPECT_FLOAT_EQ(f[2], 0.0025f);
  EXPECT_FLOAT_EQ(f[3], 0.000125f);
}

TEST(RopeFreqs, Llama3KeysAndFactorTensorFromGguf) {
  TinySpec spec;
  spec.extra = [](tally::io::GgufWriter& w) {
    w.set_string("llama.rope.scaling.type", "llama3");
    w.set_f32("llama.rope.scaling.factor", 8.0f);
    w.set_u32("llama.rope.scaling.original_context_length", 1024);
    w.set_f32("llama.rope.scaling.low_freq_factor", 1.0f);
    w.set_f32("llama.rope.scaling.high_freq_factor", 4.0f);
  };
  auto bytes = make_tiny_gguf(spec);
  auto model = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(bytes)).value());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const auto& c = (*model)->config();
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_EQ(c.rope_scaling.original_context_length, 1024);
  EXPECT_NEAR((*model)->rope_freqs()[2], 0.00308676f, 1e-8);  // head_dim 8 as above

  TinySpec with_tensor;
  with_tensor.extra = [](tally::io::GgufWriter& w) {
    const std::vector<float> factors = {1.0f, 1.0f, 2.0f, 8.0f};
    const auto st = w.add_tensor("rope_freqs.weight", tally::DType::kF32, {4},
                                 {reinterpret_cast<const uint8_t*>(factors.data()), 16});
    EXPECT_TRUE(st.ok());
  };
  auto bytes2 = make_tiny_gguf(with_tensor);
  auto model2 = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(bytes2)).value());
  ASSERT_TRUE(model2.ok()) << model2.status().to_string();
  EXPECT_TRUE((*model2)->config().has_rope_freqs);
  EXPECT_FLOAT_EQ((*model2)->rope_freqs()[2], 0.005f);
  EXPECT_FLOAT_EQ((*model2)->rope_freqs()[3], 0.000125f);
}

}  // namespace
}  // namespace tally_test
