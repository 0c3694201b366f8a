#include "plan/plan_presets.h"

#include <cmath>

#include <gtest/gtest.h>

#include "plan/plan.h"

namespace tally::plan {
namespace {

PlanModel preset(const char* name) {
  auto m = plan_preset(name);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? *m : PlanModel{};
}

int64_t kv_per_token(const PlanModel& m, DType kv = DType::kF16, int64_t tp = 1) {
  PlanOptions o;
  o.kv_type = kv;
  o.tp = tp;
  auto p = compute_plan(m, o);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? p->kv_bytes_per_token : -1;
}

// The seed example: 32 layers x 32 KV heads x 128 dims in f16 = 0.5 MiB per token.
TEST(PlanPresets, SeedExampleKvPerToken) {
  const PlanModel m = preset("llama-2-7b");
  EXPECT_EQ(m.n_layers, 32);
  EXPECT_EQ(m.n_kv_heads, 32);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(kv_per_token(m), 524'288);
  EXPECT_EQ(kv_per_token(m, DType::kF32), 1'048'576);
  EXPECT_EQ(kv_per_token(preset("llama-3-8b")), 128 * 1024);
  EXPECT_EQ(kv_per_token(preset("llama-3-70b")), 320 * 1024);
}

TEST(PlanPresets, ParameterCountsFromShapes) {
  // llama-2-7b: 6.74e9 published; the shapes give 6,738,415,616.
  const int64_t n7 = preset("llama-2-7b").n_params();
  EXPECT_NEAR(static_cast<double>(n7), 6.74e9, 0.01 * 6.74e9);
  EXPECT_EQ(n7, 6'738'415'616);
  // Published totals: Qwen2.5-7B 7.61B (qkv biases, untied), Qwen2.5-0.5B 0.49B (tied),
  // Llama-3-8B 8.03B, Llama-2-70B 68.98B, TinyLlama 1.1B, stories110M 110M.
  EXPECT_EQ(preset("qwen2.5-7b").n_params(), 7'615'616'512);
  EXPECT_EQ(preset("qwen2.5-0.5b").n_params(), 494'032'768);
  EXPECT_NEAR(preset("llama-3-8b").n_params() / 1e9, 8.03, 0.01);
  EXPECT_NEAR(preset("llama-2-70b").n_params() / 1e9, 68.98, 0.01);
  EXPECT_NEAR(preset("tinyllama-1.1b").n_params() / 1e9, 1.10, 0.01);
  EXPECT_NEAR(preset("llama-3.2-1b").n_params() / 1e9, 1.24, 0.01);
  EXPECT_NEAR(preset("stories110M").n_params() / 1e6, 110, 1);
  // Qwen3-8B: 8.19B published (untied, q/k norms of head_dim per block).
  EXPECT_NEAR(preset("qwen3-8b").n_params() / 1e9, 8.19, 0.01);
  // Gemma-3-4B's language model: 3.88B (tied, 262208-token vocabulary).
  EXPECT_NEAR(preset("gemma-3-4b").n_params() / 1e9, 3.88, 0.01);
}

TEST(PlanPresets, Gemma3HasPostNormsQkNormsAndATiedOutput) {
  const PlanModel m = preset("gemma-3-4b");
  EXPECT_EQ(m.architecture, "gemma3");
  EXPECT_TRUE(m.qk_norm);
  EXPECT_TRUE(m.post_norms);
  EXPECT_TRUE(m.tied_embeddings);
  int n_post = 0;
  for (const auto& t : m.tensors)
    if (t.name.ends_with("post_attention_norm.weight") || t.name.ends_with("post_ffw_norm.weight")) {
      ++n_post;
      EXPECT_EQ(t.n_cols, 2560) << t.name;
    }
  EXPECT_EQ(n_post, 2 * 34);
  // 13 tensors per block + token_embd, output_norm.
  EXPECT_EQ(m.tensors.size(), 34u * 13 + 2);
}

TEST(PlanPresets, Qwen3HasPerHeadQkNormsAndNoBiases) {
  const PlanModel m = preset("qwen3-8b");
  EXPECT_EQ(m.architecture, "qwen3");
  EXPECT_TRUE(m.qk_norm);
  EXPECT_FALSE(m.qkv_bias);
  int n_qk_norms = 0;
  for (const auto& t : m.tensors) {
    EXPECT_NE(t.role, TensorRole::kBiasQ) << t.name;
    if (t.name.ends_with("attn_q_norm.weight") || t.name.ends_with("attn_k_norm.weight")) {
      ++n_qk_norms;
      EXPECT_EQ(t.role, TensorRole::kNorm) << t.name;
      EXPECT_EQ(t.n_cols, 128) << t.name;
    }
  }
  EXPECT_EQ(n_qk_norms, 2 * 36);
  // 11 tensors per block + token_embd, output_norm, output.
  EXPECT_EQ(m.tensors.size(), 36u * 11 + 3);
}

// MoE presets: every expert counted (published totals: Mixtral-8x7B 46.7B, Qwen3-30B-A3B
// 30.5B), experts as 3-D tensors, the ffn of each block being the router and the experts.
TEST(PlanPresets, MoePresetsCountEveryExpert) {
  EXPECT_NEAR(preset("mixtral-8x7b").n_params() / 1e9, 46.70, 0.01);
  const PlanModel m = preset("qwen3-30b-a3b");
  EXPECT_NEAR(m.n_params() / 1e9, 30.53, 0.01);
  EXPECT_EQ(m.architecture, "qwen3moe");
  EXPECT_EQ(m.n_expert, 128);
  EXPECT_EQ(m.n_expert_used, 8);
  EXPECT_EQ(m.ffn_hidden_width(), 768);
  int n_expert_tensors = 0;
  for (const auto& t : m.tensors) {
    EXPECT_FALSE(t.name.ends_with("ffn_gate.weight")) << t.name;
    if (t.n_experts > 0) {
      ++n_expert_tensors;
      EXPECT_EQ(t.n_experts, 128) << t.name;
      EXPECT_EQ(t.n_cols * t.n_rows, int64_t{2048} * 768 * 128) << t.name;
    }
    EXPECT_EQ(plan_tensor_is_router(t), t.name.ends_with("ffn_gate_inp.weight")) << t.name;
  }
  EXPECT_EQ(n_expert_tensors, 3 * 48);
}

// Phi-3-mini-4k: q/k/v in one attn_qkv, gate and up in one ffn_up (no ffn_gate), untied;
// 3.82B published, 3,821,079,552 from the shapes; 32 layers x 32 KV heads x 96 dims.
TEST(PlanPresets, Phi3MiniFusesQkvAndGateUp) {
  const PlanModel m = preset("phi-3-mini");
  EXPECT_EQ(m.architecture, "phi3");
  EXPECT_TRUE(m.fused_projections);
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_EQ(m.n_params(), 3'821'079'552);
  EXPECT_NEAR(m.n_params() / 1e9, 3.82, 0.01);
  int n_qkv = 0, n_up = 0;
  for (const auto& t : m.tensors) {
    EXPECT_FALSE(t.name.ends_with("attn_q.weight") || t.name.ends_with("ffn_gate.weight")) << t.name;
    if (t.name.ends_with("attn_qkv.weight")) {
      ++n_qkv;
      EXPECT_EQ(t.n_cols, 3072) << t.name;
      EXPECT_EQ(t.n_rows, 3 * 3072) << t.name;
      EXPECT_EQ(t.role, TensorRole::kOther) << t.name;  // kept whole, as from a phi3 GGUF
    }
    if (t.name.ends_with("ffn_up.weight")) {
      ++n_up;
      EXPECT_EQ(t.n_rows, 2 * 8192) << t.name;
    }
  }
  EXPECT_EQ(n_qkv, 32);
  EXPECT_EQ(n_up, 32);
  // 6 tensors per block (attn_norm, attn_qkv, attn_output, ffn_norm, ffn_up, ffn_down) +
  // token_embd, output_norm, output.
  EXPECT_EQ(m.tensors.size(), 32u * 6 + 3);
  EXPECT_EQ(kv_per_token(m), 32 * 32 * 96 * 2 * 2);
}

TEST(PlanPresets, EveryPresetIsValidAndPlans) {
  const auto names = plan_preset_names();
  EXPECT_EQ(names.size(), 17u);
  for (const auto& name : names) {
    auto m = plan_preset(name);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status().to_string();
    EXPECT_EQ(m->name, name);
    EXPECT_EQ(m->source, "preset");
    EXPECT_TRUE(plan_model_validate(*m).ok()) << name;
    EXPECT_EQ(m->n_embd % m->n_heads, 0) << name;
    auto p = compute_plan(*m, PlanOptions{});
    ASSERT_TRUE(p.ok()) << name << ": " << p.status().to_string();
    EXPECT_EQ(p->options.context, m->context_length) << name;
  }
}

TEST(PlanPresets, TiedModelsHaveNoOutputTensor) {
  const PlanModel tied = preset("qwen2.5-0.5b");
  EXPECT_TRUE(tied.tied_embeddings);
  EXPECT_TRUE(tied.qkv_bias);
  for (const auto& t : tied.tensors) EXPECT_NE(t.role, TensorRole::kOutput) << t.name;
  const PlanModel untied = preset("mistral-7b");
  int n_output = 0;
  for (const auto& t : untied.tensors) n_output += t.role == TensorRole::kOutput;
  EXPECT_EQ(n_output, 1);
  // 9 tensors per block + token_embd, output_norm, output.
  EXPECT_EQ(untied.tensors.size(), 32u * 9 + 3);
}

TEST(PlanPresets, LookupIsCaseInsensitiveAndUnknownNamesListPresets) {
  EXPECT_TRUE(plan_preset("LLaMA-3-8B").ok());
  auto r = plan_preset("llama-9-1t");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.status().message().find("llama-9-1t"), std::string::npos);
  EXPECT_NE(r.status().message().find("qwen2.5-7b"), std::string::npos);
}

}  // namespace
}  // namespace tally::plan
