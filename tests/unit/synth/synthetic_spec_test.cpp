// Presets carry the real models' shapes (from plan) and converter hyper-parameters; the
// Llama 3 rope factors follow convert_hf_to_gguf.py.
#include "synth/synthetic_spec.h"

#include <cmath>

#include <gtest/gtest.h>

namespace tally::synth {
namespace {

TEST(SyntheticSpec, PresetsOfTheSpeedIssue) {
  struct Want {
    const char* name;
    const char* arch;
    int64_t layers, embd, heads, kv_heads, vocab;
    bool tied, llama3_rope;
    float rope_base, eps;
    const char* vocab_file;
  };
  const Want wants[] = {
      {"stories110M", "llama", 12, 768, 12, 12, 32000, true, false, 1e4f, 1e-5f, "ggml-vocab-llama-spm.gguf"},
      {"tinyllama-1.1b", "llama", 22, 2048, 32, 4, 32000, false, false, 1e4f, 1e-5f, "ggml-vocab-llama-spm.gguf"},
      {"llama-3.2-1b", "llama", 16, 2048, 32, 8, 128256, true, true, 5e5f, 1e-5f, "ggml-vocab-gpt-2.gguf"},
      {"qwen2.5-0.5b", "qwen2", 24, 896, 14, 2, 151936, true, false, 1e6f, 1e-6f, "ggml-vocab-gpt-2.gguf"},
      {"llama-2-7b", "llama", 32, 4096, 32, 32, 32000, false, false, 1e4f, 1e-5f, "ggml-vocab-llama-spm.gguf"},
      {"qwen3-8b", "qwen3", 36, 4096, 32, 8, 151936, false, false, 1e6f, 1e-6f, "ggml-vocab-gpt-2.gguf"},
      {"gemma-3-4b", "gemma3", 34, 2560, 8, 4, 262208, true, false, 1e6f, 1e-6f, "ggml-vocab-gpt-2.gguf"},
      {"qwen3-30b-a3b", "qwen3moe", 48, 2048, 32, 4, 151936, false, false, 1e6f, 1e-6f, "ggml-vocab-gpt-2.gguf"},
      {"mixtral-8x7b", "llama", 32, 4096, 32, 8, 32000, false, false, 1e6f, 1e-5f, "ggml-vocab-llama-spm.gguf"},
      {"phi-3-mini", "phi3", 32, 3072, 32, 32, 32064, false, false, 1e4f, 1e-5f, "ggml-vocab-llama-spm.gguf"},
  };
  for (const Want& w : wants) {
    auto spec = synthetic_model_spec(w.name);
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    const auto& m = spec->shape;
    EXPECT_EQ(m.architecture, w.arch) << w.name;
    EXPECT_EQ(m.n_layers, w.layers) << w.name;
    EXPECT_EQ(m.n_embd, w.embd) << w.name;
    EXPECT_EQ(m.n_heads, w.heads) << w.name;
    EXPECT_EQ(m.n_kv_heads, w.kv_heads) << w.name;
    EXPECT_EQ(m.n_vocab, w.vocab) << w.name;
    EXPECT_EQ(m.tied_embeddings, w.tied) << w.name;
    EXPECT_EQ(spec->llama3_rope.has_value(), w.llama3_rope) << w.name;
    EXPECT_EQ(spec->rope_freq_base, w.rope_base) << w.name;
    EXPECT_EQ(spec->rms_norm_eps, w.eps) << w.name;
    EXPECT_EQ(spec->default_vocab, w.vocab_file) << w.name;
  }
  EXPECT_TRUE(synthetic_model_spec("qwen2.5-0.5b")->shape.qkv_bias);
  EXPECT_TRUE(synthetic_model_spec("qwen3-8b")->shape.qk_norm);
  EXPECT_TRUE(synthetic_model_spec("qwen3-8b")->head_dim_keys);
  EXPECT_EQ(synthetic_model_spec("gemma-3-4b")->sliding_window, 1024);
  EXPECT_EQ(synthetic_model_spec("gemma-3-4b")->rope_linear_factor, 8.0f);
  EXPECT_TRUE(synthetic_model_spec("phi-3-mini")->shape.fused_projections);
  EXPECT_EQ(synthetic_model_spec("phi-3-mini")->sliding_window, 2047);
  EXPECT_EQ(synthetic_model_spec("phi-3-mini")->added_tokens, std::vector<std::string>{"<|endoftext|>"});
  EXPECT_FALSE(synthetic_model_spec("no-such-model").ok());
}

TEST(SyntheticSpec, Llama3RopeFactorsForLlama32) {
  const auto spec = synthetic_model_spec("llama-3.2-1b");
  ASSERT_TRUE(spec.ok());
  const auto& s = *spec->llama3_rope;
  EXPECT_EQ(s.factor, 32.0f);
  EXPECT_EQ(s.original_context_length, 8192);
  const auto f = llama3_rope_factors(64, 500000.0f, s);
  ASSERT_EQ(f.size(), 32u);
  // Short wavelengths keep their frequency, long ones are divided by the factor, and the band
  // in between moves monotonically from 1 to 32.
  EXPECT_EQ(f.front(), 1.0f);
  EXPECT_EQ(f.back(), 32.0f);
  int n_one = 0, n_factor = 0, n_between = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (i > 0) {
      EXPECT_GE(f[i], f[i - 1]) << i;
    }
    n_one += f[i] == 1.0f;
    n_factor += f[i] == 32.0f;
    n_between += f[i] > 1.0f && f[i] < 32.0f;
    // Check each class against its wavelength directly.
    const double freq = 1.0 / std::pow(500000.0, 2.0 * i / 64.0);
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < 2048.0 * 0.999) {
      EXPECT_EQ(f[i], 1.0f) << i;
    }
    if (wavelen > 8192.0 * 1.001) {
      EXPECT_EQ(f[i], 32.0f) << i;
    }
    if (wavelen > 2048.0 * 1.001 && wavelen < 8192.0 * 0.999) {
      const double smooth = (8192.0 / wavelen - 1.0) / 3.0;
      EXPECT_NEAR(f[i], 1.0 / ((1 - smooth) / 32.0 + smooth), 1e-3 * f[i]) << i;
    }
  }
  EXPECT_GT(n_one, 0);
  EXPECT_GT(n_factor, 0);
  EXPECT_GT(n_between, 0);
  EXPECT_EQ(n_one + n_factor + n_between, 32);
}

}  // namespace
}  // namespace tally::synth
