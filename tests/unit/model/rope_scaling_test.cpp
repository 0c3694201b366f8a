// Long-context rope scaling on tiny random models against the independent reference forward
// (f64 frequencies written after Hugging Face's formulas): YaRN (llama's adjacent pairs and
// qwen's NeoX halves) and phi3's LongRoPE (long/short factor tensors chosen by the context,
// plus its attention factor). Each also checks that dropping the scaling from the reference
// breaks the match, so the match is the scaling's doing.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "arch_check.h"
#include "io/gguf.h"
#include "model/model.h"
#include "model/rope_freqs.h"

namespace tally_test {
namespace {

using tally::RopeScalingType;

const std::vector<int32_t> kTokens = {3, 17, 39, 0, 22, 22, 8, 31, 5, 12, 19, 2, 36, 27, 11, 4, 9, 33, 1, 25};

void add_f32s(tally::io::GgufWriter& w, const std::string& name, const std::vector<float>& v) {
  const auto st = w.add_tensor(name, tally::DType::kF32, {static_cast<int64_t>(v.size())},
                               {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)});
  EXPECT_TRUE(st.ok()) << st.to_string();
}

// head_dim 16: 8 pairs, of which with original context 64 and the default betas pair 0 keeps
// its frequency, pairs 1-2 are blended and 3-7 divided by the factor (see the hand check).
TinySpec yarn_spec(const std::string& arch) {
  TinySpec s;
  s.arch = arch;
  s.n_embd = 64;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.head_dim = 16;
  s.biases = arch == "qwen2";
  s.seed = 29;
  s.extra = [arch](tally::io::GgufWriter& w) {
    w.set_string(arch + ".rope.scaling.type", "yarn");
    w.set_f32(arch + ".rope.scaling.factor", 4.0f);
    w.set_u32(arch + ".rope.scaling.original_context_length", 64);
  };
  return s;
}

RefSpec yarn_ref(const std::string& arch) {
  RefSpec r{64, 48, 2, 4, 2, 16, 40};
  r.neox = arch != "llama";
  r.biases = arch == "qwen2";
  r.yarn_factor = 4.0;
  r.yarn_orig_ctx = 64;
  r.rope_mscale = 1.0 + 0.1 * std::log(4.0);
  return r;
}

TEST(Yarn, FrequenciesHandComputed) {
  // rope_dim 8, base 10000, original context 64: the pair turning 32 times over 64 positions
  // is at 8 ln(64 / 64pi) / (2 ln 1e4) = -0.497 -> floor -1 -> 0, the one turning once at
  // 8 ln(64 / 2pi) / (2 ln 1e4) = 1.008 -> ceil 2. Ramp: pair 0 kept, pair 1 half, 2-3 / 4.
  tally::ModelConfig c;
  c.rope_dim = c.head_dim = 8;
  c.rope_freq_base = 10000.0f;
  c.rope_scaling.type = RopeScalingType::kYarn;
  c.rope_scaling.factor = 4.0f;
  c.rope_scaling.original_context_length = 64;
  const auto f = tally::rope_frequencies(c, {});
  ASSERT_EQ(f.size(), 4u);
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_FLOAT_EQ(f[1], 0.1f * (0.5f / 4 + 0.5f));
  EXPECT_FLOAT_EQ(f[2], 0.01f / 4);
  EXPECT_FLOAT_EQ(f[3], 0.001f / 4);
  c.rope_scaling.ext_factor = 0.0f;  // no ramp: plain linear interpolation
  EXPECT_FLOAT_EQ(tally::rope_frequencies(c, {})[0], 0.25f);
}

TEST(Yarn, KeysFromGguf) {
  TinySpec s = yarn_spec("qwen3");
  s.extra = [](tally::io::GgufWriter& w) {
    w.set_string("qwen3.rope.scaling.type", "yarn");
    w.set_f32("qwen3.rope.scaling.factor", 8.0f);
    w.set_u32("qwen3.rope.scaling.original_context_length", 32);
    w.set_f32("qwen3.rope.scaling.yarn_beta_fast", 16.0f);
    w.set_f32("qwen3.rope.scaling.yarn_beta_slow", 2.0f);
    w.set_f32("qwen3.rope.scaling.yarn_attn_factor", 0.5f);
  };
  s.qk_norm = true;
  const LoadedTinyModel tiny = load_tiny_model(s);
  ASSERT_TRUE(tiny.model);
  const auto& r = tiny.model->config().rope_scaling;
  EXPECT_EQ(r.type, RopeScalingType::kYarn);
  EXPECT_EQ(r.original_context_length, 32);
  EXPECT_FLOAT_EQ(r.beta_fast, 16.0f);
  EXPECT_FLOAT_EQ(r.beta_slow, 2.0f);
  EXPECT_FLOAT_EQ(r.attn_factor, 0.5f * (1.0f + 0.1f * std::log(8.0f)));
}

TEST(Yarn, BadKeysAreClearErrors) {
  TinySpec no_orig = yarn_spec("llama");
  no_orig.extra = [](tally::io::GgufWriter& w) { w.set_string("llama.rope.scaling.type", "yarn"); };
  auto m = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(make_tiny_gguf(no_orig))).value());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("original_context_length"), std::string::npos) << m.status().to_string();
  TinySpec betas = yarn_spec("llama");
  betas.extra = [](tally::io::GgufWriter& w) {
    w.set_string("llama.rope.scaling.type", "yarn");
    w.set_u32("llama.rope.scaling.original_context_length", 64);
    w.set_f32("llama.rope.scaling.yarn_beta_fast", 1.0f);
  };
  m = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(make_tiny_gguf(betas))).value());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("yarn_beta_fast"), std::string::npos) << m.status().to_string();
}

class YarnArch : public ::testing::TestWithParam<std::string> {};

TEST_P(YarnArch, MatchesReference) {
  const LoadedTinyModel tiny = load_tiny_model(yarn_spec(GetParam()));
  ASSERT_TRUE(tiny.model);
  expect_matches_reference(*tiny.model, yarn_ref(GetParam()), kTokens);
  RefSpec plain = yarn_ref(GetParam());
  plain.yarn_factor = 0;
  plain.rope_mscale = 1;
  EXPECT_GT(reference_max_diff(*tiny.model, plain, kTokens), 1e-2f);
  RefSpec no_mscale = yarn_ref(GetParam());
  no_mscale.rope_mscale = 1;
  EXPECT_GT(reference_max_diff(*tiny.model, no_mscale, kTokens), 1e-2f);
}

TEST_P(YarnArch, GreedyOutputIsBatchChunkAndThreadInvariant) {
  const LoadedTinyModel tiny = load_tiny_model(yarn_spec(GetParam()));
  ASSERT_TRUE(tiny.model);
  expect_batch_and_thread_invariant(*tiny.model, kTokens);
}

INSTANTIATE_TEST_SUITE_P(Archs, YarnArch, ::testing::Values("llama", "qwen2"));

// phi3 with LongRoPE: trained for 256 positions, originally 64; factors > 1 (lower
// frequencies), the long ones more so, as Phi-3's are.
const std::vector<float> kLongFactors = {1.0f, 1.5f, 3.0f, 6.0f, 9.0f, 12.0f, 16.0f, 20.0f};
const std::vector<float> kShortFactors = {1.0f, 1.1f, 1.2f, 1.5f, 2.0f, 2.5f, 3.0f, 3.0f};

TinySpec longrope_spec() {
  TinySpec s = yarn_spec("phi3");
  s.fused = true;
  s.extra = [](tally::io::GgufWriter& w) {
    w.set_u32("phi3.rope.scaling.original_context_length", 64);
    add_f32s(w, "rope_factors_long.weight", kLongFactors);
    add_f32s(w, "rope_factors_short.weight", kShortFactors);
  };
  return s;
}

RefSpec longrope_ref(const std::vector<float>& factors, double mscale) {
  RefSpec r{64, 48, 2, 4, 2, 16, 40};
  r.neox = true;
  r.fused = true;
  r.rope_divisors.assign(factors.begin(), factors.end());
  r.rope_mscale = mscale;
  return r;
}

// Hugging Face's Phi-3: sqrt(1 + ln(max_position / original) / ln(original)).
const double kPhi3Mscale = std::sqrt(1.0 + std::log(256.0 / 64.0) / std::log(64.0));

TEST(LongRope, LongFactorsForTheTrainedContextMatchReference) {
  const LoadedTinyModel tiny = load_tiny_model(longrope_spec());
  ASSERT_TRUE(tiny.model);
  EXPECT_TRUE(tiny.model->config().has_longrope);
  EXPECT_FLOAT_EQ(tiny.model->config().rope_scaling.attn_factor, static_cast<float>(kPhi3Mscale));
  expect_matches_reference(*tiny.model, longrope_ref(kLongFactors, kPhi3Mscale), kTokens);
  EXPECT_GT(reference_max_diff(*tiny.model, longrope_ref(kShortFactors, kPhi3Mscale), kTokens), 1e-2f);
  EXPECT_GT(reference_max_diff(*tiny.model, longrope_ref(kLongFactors, 1.0), kTokens), 1e-2f);
  expect_batch_and_thread_invariant(*tiny.model, kTokens);
}

TEST(LongRope, ShortFactorsWithinTheOriginalContext) {
  const LoadedTinyModel tiny = load_tiny_model(longrope_spec());
  ASSERT_TRUE(tiny.model);
  tiny.model->use_context_length(64);
  expect_matches_reference(*tiny.model, longrope_ref(kShortFactors, kPhi3Mscale), kTokens);
  tiny.model->use_context_length(65);
  expect_matches_reference(*tiny.model, longrope_ref(kLongFactors, kPhi3Mscale), kTokens);
}

TEST(LongRope, AttnFactorKeyOverridesTheDefault) {
  TinySpec s = longrope_spec();
  const auto base = s.extra;
  s.extra = [base](tally::io::GgufWriter& w) {
    base(w);
    w.set_f32("phi3.rope.scaling.attn_factor", 1.25f);
  };
  const LoadedTinyModel tiny = load_tiny_model(s);
  ASSERT_TRUE(tiny.model);
  expect_matches_reference(*tiny.model, longrope_ref(kLongFactors, 1.25), kTokens);
}

TEST(LongRope, OneFactorTensorOrBadFactorsAreClearErrors) {
  TinySpec one = longrope_spec();
  one.extra = [](tally::io::GgufWriter& w) { add_f32s(w, "rope_factors_long.weight", kLongFactors); };
  auto m = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(make_tiny_gguf(one))).value());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("'rope_factors_short.weight' not found"), std::string::npos)
      << m.status().to_string();

  TinySpec declared = longrope_spec();
  declared.extra = [](tally::io::GgufWriter& w) { w.set_string("phi3.rope.scaling.type", "longrope"); };
  m = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(make_tiny_gguf(declared))).value());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("rope_factors_long.weight"), std::string::npos) << m.status().to_string();

  TinySpec bad = longrope_spec();
  bad.extra = [](tally::io::GgufWriter& w) {
    add_f32s(w, "rope_factors_long.weight", {1, 1, 1, 0, 1, 1, 1, 1});
    add_f32s(w, "rope_factors_short.weight", kShortFactors);
  };
  m = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(make_tiny_gguf(bad))).value());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("expected positive factors"), std::string::npos) << m.status().to_string();

  TinySpec shape = longrope_spec();
  shape.extra = [](tally::io::GgufWriter& w) {
    add_f32s(w, "rope_factors_long.weight", {1, 2, 3, 4});
    add_f32s(w, "rope_factors_short.weight", kShortFactors);
  };
  m = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(make_tiny_gguf(shape))).value());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("rope_factors_long.weight"), std::string::npos) << m.status().to_string();
}

}  // namespace
}  // namespace tally_test
