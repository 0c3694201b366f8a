// gemma2 and gemma3 paths on tiny random models, against the independent reference forward:
// embedding scale, GeGLU, post norms, sliding-window layers (gemma2 every other layer, gemma3
// five of six with their own rope base), attention and final soft-capping (gemma2), per-head
// q/k norms and linear rope scaling of the global layers (gemma3).
#include <gtest/gtest.h>

#include <cmath>

#include "arch_check.h"
#include "io/gguf.h"
#include "model/model.h"
#include "model_runner.h"
#include "tiny_model.h"

namespace tally_test {
namespace {

constexpr int kWindow = 5;

// Common shape: 4 heads of 16 over a 48-wide stream (as gemma, head_dim apart from n_embd /
// n_heads), tied output, NeoX rope, norms near 1 (GGUF stores gemma's 1 + w).
TinySpec gemma_spec(const std::string& arch, int64_t n_layers) {
  TinySpec s;
  s.arch = arch;
  s.tied = true;
  s.post_norms = true;
  s.qk_norm = arch == "gemma3";
  s.eps = 1e-6f;
  s.n_embd = 48;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.head_dim = 16;
  s.n_ff = 64;
  s.n_layers = n_layers;
  s.seed = 11;
  return s;
}

RefSpec gemma_ref(const TinySpec& s) {
  RefSpec r{48, 64, static_cast<int>(s.n_layers), 4, 2, 16, 40, s.eps, s.freq_base, /*neox=*/true,
            /*biases=*/false, /*tied=*/true};
  r.qk_norm = s.qk_norm;
  r.embd_scale = true;
  r.gelu = true;
  r.post_norms = true;
  r.window = kWindow;
  return r;
}

struct GemmaCase {
  TinySpec spec;
  RefSpec ref;
};

// Small caps so that soft-capping changes the numbers at these scales.
GemmaCase gemma2_case() {
  GemmaCase c{gemma_spec("gemma2", 2), {}};
  c.spec.extra = [](tally::io::GgufWriter& w) {
    w.set_u32("gemma2.attention.sliding_window", kWindow);
    w.set_f32("gemma2.attn_logit_softcapping", 2.0f);
    w.set_f32("gemma2.final_logit_softcapping", 3.0f);
  };
  c.ref = gemma_ref(c.spec);
  c.ref.swa_period = 2;
  c.ref.attn_softcap = 2.0;
  c.ref.final_softcap = 3.0;
  return c;
}

// Six layers: 0-4 local (rope base 10000), 5 global (base 1e6, linear factor 8).
GemmaCase gemma3_case() {
  GemmaCase c{gemma_spec("gemma3", 6), {}};
  c.spec.freq_base = 1000000.0f;
  c.spec.extra = [](tally::io::GgufWriter& w) {
    w.set_u32("gemma3.attention.sliding_window", kWindow);
    w.set_string("gemma3.rope.scaling.type", "linear");
    w.set_f32("gemma3.rope.scaling.factor", 8.0f);
  };
  c.ref = gemma_ref(c.spec);
  c.ref.swa_period = 6;
  c.ref.local_freq_base = 10000.0f;
  c.ref.rope_linear_factor = 8.0f;
  return c;
}

// 20 tokens: four times the window, so the local layers drop most of the context.
const std::vector<int32_t> kTokens = {3, 17, 39, 0, 22, 22, 8, 31, 5, 12, 19, 2, 36, 27, 11, 4, 9, 33, 1, 25};

// Largest |logit difference| between the model and the reference over the first 12 positions.
float max_diff_from(const tally::Model& model, const RefSpec& ref) {
  return reference_max_diff(model, ref, {kTokens.begin(), kTokens.begin() + 12});
}

TEST(Gemma2, ConfigReadsWindowSoftcapsAndLayerKinds) {
  const LoadedTinyModel tiny = load_tiny_model(gemma2_case().spec);
  ASSERT_TRUE(tiny.model);
  const auto& model = tiny.model;
  const tally::ModelConfig& c = model->config();
  EXPECT_EQ(c.sliding_window, kWindow);
  EXPECT_EQ(c.attn_softcap, 2.0f);
  EXPECT_EQ(c.final_softcap, 3.0f);
  EXPECT_EQ(c.attn_score_divisor, 4.0f);  // sqrt(head_dim)
  EXPECT_TRUE(c.is_local_layer(0));
  EXPECT_FALSE(c.is_local_layer(1));
  EXPECT_TRUE(model->local_rope_freqs().empty());
}

TEST(Gemma2, DefaultsAreLlamaCppsAndThe27BScalesByEmbdOverHeads) {
  TinySpec s = gemma_spec("gemma2", 46);  // the 27B's layer count
  const LoadedTinyModel tiny = load_tiny_model(s);
  ASSERT_TRUE(tiny.model);
  const auto& model = tiny.model;
  EXPECT_EQ(model->config().sliding_window, 4096);
  EXPECT_EQ(model->config().attn_softcap, 50.0f);
  EXPECT_EQ(model->config().final_softcap, 30.0f);
  EXPECT_EQ(model->config().attn_score_divisor, std::sqrt(12.0f));  // n_embd / n_heads = 12
}

TEST(Gemma2, MatchesReference) {
  const GemmaCase c = gemma2_case();
  const LoadedTinyModel tiny = load_tiny_model(c.spec);
  ASSERT_TRUE(tiny.model);
  const auto& model = tiny.model;
  expect_matches_reference(*model, c.ref, kTokens);
}

TEST(Gemma2, GreedyOutputIsBatchChunkAndThreadInvariant) {
  const LoadedTinyModel tiny = load_tiny_model(gemma2_case().spec);
  ASSERT_TRUE(tiny.model);
  const auto& model = tiny.model;
  expect_batch_and_thread_invariant(*model, kTokens);
}

// Each feature changes the logits: the reference without it is far from tally's.
TEST(Gemma2, WindowSoftcapsAndGeluEachMatter) {
  const GemmaCase c = gemma2_case();
  const LoadedTinyModel tiny = load_tiny_model(c.spec);
  ASSERT_TRUE(tiny.model);
  const auto& model = tiny.model;
  EXPECT_LT(max_diff_from(*model, c.ref), 1e-3f);
  RefSpec r = c.ref;
  r.window = 0;
  EXPECT_GT(max_diff_from(*model, r), 1e-3f) << "no window";
  r = c.ref;
  r.attn_softcap = 0;
  EXPECT_GT(max_diff_from(*model, r), 1e-3f) << "no attention soft-cap";
  r = c.ref;
  r.final_softcap = 0;
  EXPECT_GT(max_diff_from(*model, r), 1e-3f) << "no final soft-cap";
  r = c.ref;
  r.gelu = false;
  EXPECT_GT(max_diff_from(*model, r), 1e-3f) << "silu instead of gelu";
  r = c.ref;
  r.embd_scale = false;
  EXPECT_GT(max_diff_from(*model, r), 1e-3f) << "no embedding scale";
}

TEST(Gemma3, ConfigHasFiveLocalLayersToOneGlobal) {
  const LoadedTinyModel tiny = load_tiny_model(gemma3_case().spec);
  ASSERT_TRUE(tiny.model);
  const auto& model = tiny.model;
  const tally::ModelConfig& c = model->config();
  for (int l = 0; l < 6; ++l) EXPECT_EQ(c.is_local_layer(l), l != 5) << l;
  EXPECT_EQ(c.attn_softcap, 0.0f);
  EXPECT_EQ(c.final_softcap, 0.0f);
  ASSERT_EQ(model->local_rope_freqs().size(), 8u);
  EXPECT_FLOAT_EQ(model->local_rope_freqs()[1], 1.0f / std::pow(10000.0f, 2.0f / 16.0f));
  EXPECT_FLOAT_EQ(model->rope_freqs()[1], 1.0f / std::pow(1000000.0f, 2.0f / 16.0f) / 8.0f);
}

TEST(Gemma3, MatchesReference) {
  const GemmaCase c = gemma3_case();
  const LoadedTinyModel tiny = load_tiny_model(c.spec);
  ASSERT_TRUE(tiny.model);
  const auto& model = tiny.model;
  expect_matches_reference(*model, c.ref, kTokens);
}

TEST(Gemma3, GreedyOutputIsBatchChunkAndThreadInvariant) {
  const LoadedTinyModel tiny = load_tiny_model(gemma3_case().spec);
  ASSERT_TRUE(tiny.model);
  const auto& model = tiny.model;
  expect_batch_and_thread_invariant(*model, kTokens);
}

TEST(Gemma3, LocalRopeBaseAndWindowEachMatter) {
  const GemmaCase c = gemma3_case();
  const LoadedTinyModel tiny = load_tiny_model(c.spec);
  ASSERT_TRUE(tiny.model);
  const auto& model = tiny.model;
  RefSpec r = c.ref;
  r.local_freq_base = 0;  // local layers with the global base
  EXPECT_GT(max_diff_from(*model, r), 1e-3f) << "global base on local layers";
  r = c.ref;
  r.window = 0;
  EXPECT_GT(max_diff_from(*model, r), 1e-3f) << "no window";
}

TEST(Gemma3, MissingSlidingWindowKeyIsAClearError) {
  TinySpec s = gemma3_case().spec;
  s.extra = nullptr;
  auto model = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(make_tiny_gguf(s))).value());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("gemma3.attention.sliding_window"), std::string::npos)
      << model.status().to_string();
}

TEST(Gemma3, MissingPostNormIsAClearError) {
  TinySpec s = gemma3_case().spec;
  s.skip_tensors = {"blk.2.post_ffw_norm.weight"};
  auto model = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(make_tiny_gguf(s))).value());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("blk.2.post_ffw_norm.weight"), std::string::npos)
      << model.status().to_string();
}

}  // namespace
}  // namespace tally_test
