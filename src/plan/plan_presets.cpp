#include "plan/plan_presets.h"

#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/ascii.h"

namespace tally::plan {

namespace {

struct Preset {
  const char* name;
  const char* architecture;
  int64_t n_layers, n_embd, n_heads, n_kv_heads, head_dim, n_ff, n_vocab, context_length;
  bool tied;
  bool qkv_bias;
  DType native;
  bool qk_norm = false;
  bool post_norms = false;
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;  // mixture of experts
  bool fused_projections = false;                          // phi3's attn_qkv and gate+up ffn_up
};

// From each model's published config (HF config.json unless noted): num_hidden_layers,
// hidden_size, num_attention_heads, num_key_value_heads, head_dim (hidden/heads unless
// given), intermediate_size, vocab_size, max_position_embeddings, tie_word_embeddings,
// torch_dtype.
// - qwen2.5-7b: the Instruct config (max_position_embeddings 32768, the native context
//   without YaRN); the base repo's config says 131072.
// - mistral-7b: Mistral-7B-v0.1 (vocab 32000, 32768 positions, sliding window 4096 ignored:
//   tally keeps the whole context).
// - qwen3-8b: Qwen/Qwen3-8B (head_dim 128 given explicitly, q/k norms, no biases; 40960
//   positions without YaRN).
// - gemma-3-4b: google/gemma-3-4b-it's text_config (the language model only; head_dim 256,
//   q/k norms and post norms, tied; 1024-token sliding window on 5 of 6 layers, whose KV
//   blocks tally still keeps for the whole context).
// - qwen3-30b-a3b: Qwen/Qwen3-30B-A3B (48 layers, 128 experts of moe_intermediate_size 768,
//   8 per token, norm_topk_prob; head_dim 128, q/k norms; intermediate_size 6144 unused).
// - mixtral-8x7b: mistralai/Mixtral-8x7B-v0.1 (llama arch in GGUF, 8 experts of 14336, 2 per
//   token, 32768 positions, rope_theta 1e6).
// - moe-mini: not a published model: a small Mixtral-like shape (8 experts of 2816, top 2,
//   12 layers of 1024) whose synthetic file fits a small machine, for `tally bench`.
// - phi-3-mini: microsoft/Phi-3-mini-4k-instruct (q/k/v fused in qkv_proj, gate and up in
//   gate_up_proj; vocab 32064 = Llama 2's 32000 + 64 added; 4096 positions, no LongRoPE;
//   its sliding window of 2047 is not applied, as in llama.cpp).
// - stories110M: llama2.c's TinyStories model (dim 768, 12 layers, 12 heads, hidden_dim
//   2048, seq_len 1024, classifier shared with the embedding, fp32 checkpoint).
constexpr std::array kPresets = {
    Preset{"llama-2-7b", "llama", 32, 4096, 32, 32, 128, 11008, 32000, 4096, false, false,
           DType::kF16},
    Preset{"llama-2-13b", "llama", 40, 5120, 40, 40, 128, 13824, 32000, 4096, false, false,
           DType::kF16},
    Preset{"llama-2-70b", "llama", 80, 8192, 64, 8, 128, 28672, 32000, 4096, false, false,
           DType::kF16},
    Preset{"llama-3-8b", "llama", 32, 4096, 32, 8, 128, 14336, 128256, 8192, false, false,
           DType::kBF16},
    Preset{"llama-3-70b", "llama", 80, 8192, 64, 8, 128, 28672, 128256, 8192, false, false,
           DType::kBF16},
    Preset{"llama-3.2-1b", "llama", 16, 2048, 32, 8, 64, 8192, 128256, 131072, true, false,
           DType::kBF16},
    Preset{"tinyllama-1.1b", "llama", 22, 2048, 32, 4, 64, 5632, 32000, 2048, false, false,
           DType::kBF16},
    Preset{"qwen2.5-0.5b", "qwen2", 24, 896, 14, 2, 64, 4864, 151936, 32768, true, true,
           DType::kBF16},
    Preset{"qwen2.5-7b", "qwen2", 28, 3584, 28, 4, 128, 18944, 152064, 32768, false, true,
           DType::kBF16},
    Preset{"qwen3-8b", "qwen3", 36, 4096, 32, 8, 128, 12288, 151936, 40960, false, false,
           DType::kBF16, /*qk_norm=*/true},
    Preset{"gemma-3-4b", "gemma3", 34, 2560, 8, 4, 256, 10240, 262208, 131072, true, false,
           DType::kBF16, /*qk_norm=*/true, /*post_norms=*/true},
    Preset{"stories110M", "llama", 12, 768, 12, 12, 64, 2048, 32000, 1024, true, false,
           DType::kF32},
    Preset{"mistral-7b", "llama", 32, 4096, 32, 8, 128, 14336, 32000, 32768, false, false,
           DType::kBF16},
    Preset{"qwen3-30b-a3b", "qwen3moe", 48, 2048, 32, 4, 128, 6144, 151936, 40960, false, false,
           DType::kBF16, /*qk_norm=*/true, /*post_norms=*/false, 128, 8, 768},
    Preset{"mixtral-8x7b", "llama", 32, 4096, 32, 8, 128, 14336, 32000, 32768, false, false,
           DType::kBF16, false, false, 8, 2, 14336},
    Preset{"moe-mini", "llama", 12, 1024, 16, 4, 64, 2816, 32000, 4096, false, false,
           DType::kBF16, false, false, 8, 2, 2816},
    Preset{"phi-3-mini", "phi3", 32, 3072, 32, 32, 96, 8192, 32064, 4096, false, false,
           DType::kBF16, false, false, 0, 0, 0, /*fused_projections=*/true},
};

}  // namespace

std::vector<std::string> plan_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : kPresets) names.emplace_back(p.name);
  return names;
}

Result<PlanModel> plan_preset(std::string_view name) {
  for (const auto& p : kPresets) {
    if (!ascii_iequals(p.name, name)) continue;
    PlanModel m;
    m.name = p.name;
    m.source = "preset";
    m.architecture = p.architecture;
    m.n_layers = p.n_layers;
    m.n_embd = p.n_embd;
    m.n_heads = p.n_heads;
    m.n_kv_heads = p.n_kv_heads;
    m.head_dim = p.head_dim;
    m.n_ff = p.n_ff;
    m.n_vocab = p.n_vocab;
    m.context_length = p.context_length;
    m.tied_embeddings = p.tied;
    m.qkv_bias = p.qkv_bias;
    m.qk_norm = p.qk_norm;
    m.post_norms = p.post_norms;
    m.n_expert = p.n_expert;
    m.n_expert_used = p.n_expert_used;
    m.n_ff_exp = p.n_ff_exp;
    m.fused_projections = p.fused_projections;
    m.native_type = p.native;
    return plan_model_finish(std::move(m));
  }
  return make_error(ErrorCode::kNotFound, "no model preset named '{}' (presets: {})", name,
                    fmt::join(plan_preset_names(), ", "));
}

}  // namespace tally::plan
