// The hyper-parameters of a llama-family model, read from GGUF metadata
// (`<arch>.embedding_length`, ...) and the shape of the token embedding.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "io/gguf.h"
#include "model/arch.h"

namespace tally {

enum class RopeScalingType { kNone, kLinear, kLlama3, kYarn };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  float factor = 1.0f;                   // linear, llama3 and yarn
  int64_t original_context_length = 0;   // llama3, yarn, LongRoPE (phi3)
  float low_freq_factor = 1.0f;          // llama3
  float high_freq_factor = 4.0f;         // llama3
  // YaRN (rope.scaling.yarn_*; llama.cpp's defaults): pairs turning more than beta_fast times
  // over the original context keep their frequency, fewer than beta_slow times are divided by
  // factor, a linear ramp in between; ext_factor scales the ramp (0: plain linear scaling).
  float ext_factor = 1.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  // The attention factor ("mscale") that multiplies cos and sin, so q.k by its square:
  // rope.scaling.attn_factor x rope.scaling.yarn_attn_factor, and for YaRN (ext_factor != 0)
  // also x (1 + 0.1 ln factor). LongRoPE without the key: sqrt(1 + ln(ctx/orig) / ln orig).
  float attn_factor = 1.0f;
};

struct ModelConfig {
  const ArchTraits* arch = nullptr;
  int64_t n_vocab = 0;         // rows of token_embd.weight
  int64_t n_embd = 0;          // residual stream width
  int64_t n_ff = 0;            // feed-forward hidden width
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;      // divides n_heads (GQA); == n_heads for plain multi-head
  int64_t head_dim = 0;        // key_length == value_length
  int64_t context_length = 0;  // positions the model was trained for: the largest position + 1
  int64_t rope_dim = 0;        // rotated dims per head (even, <= head_dim)
  float rope_freq_base = 10000.0f;
  float norm_eps = 1e-5f;
  RopeScaling rope_scaling;
  bool has_rope_freqs = false;  // rope_freqs.weight: per-pair frequency divisors (Llama 3.1)
  bool has_longrope = false;    // rope_factors_long/short.weight: LongRoPE's per-pair divisors
                                // (phi3), the long ones for contexts past original_context_length
  bool tied_output = false;     // no output.weight: logits use token_embd.weight
  // Gemma (0 / 0.0 where the arch has none; see ArchTraits):
  int64_t sliding_window = 0;        // <arch>.attention.sliding_window, for the local layers
                                     // (every layer for llama: io::GgufHparams::full_window)
  float attn_softcap = 0.0f;         // <arch>.attn_logit_softcapping
  float final_softcap = 0.0f;        // <arch>.final_logit_softcapping
  float attn_score_divisor = 0.0f;   // sqrt(query_pre_attn_scalar); 0: sqrt(head_dim)
  // Mixture of experts (n_expert == 0: a dense FFN of width n_ff):
  int64_t n_expert = 0;        // <arch>.expert_count
  int64_t n_expert_used = 0;   // <arch>.expert_used_count: experts per token (top-k)
  int64_t n_ff_exp = 0;        // each expert's hidden width
  int64_t n_ff_shexp = 0;      // the shared expert's hidden width (0: none)

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  bool is_moe() const { return n_expert > 0; }
  // Width of the FFN hidden buffers: the dense FFN, or the widest expert.
  // AttentionArgs::score_divisor of a layer: attn_score_divisor (0: sqrt(head_dim)) over the
  // square of the rope attention factor, which scaling q and k by it would give (the local
  // layers of an arch with a local rope base of its own are unscaled).
  float attention_divisor(bool local) const {
    const float m = local && arch->swa_rope_base > 0.0f ? 1.0f : rope_scaling.attn_factor;
    if (m == 1.0f) return attn_score_divisor;
    const float d = attn_score_divisor > 0.0f ? attn_score_divisor : std::sqrt(static_cast<float>(head_dim));
    return d / (m * m);
  }
  int64_t ffn_hidden_width() const { return is_moe() ? std::max(n_ff_exp, n_ff_shexp) : n_ff; }
  // Whether layer l attends over the sliding window only: every layer of an arch without a
  // period (llama with a window: Mistral 7B v0.1), else gemma's pattern.
  bool is_local_layer(int64_t l) const {
    const int64_t period = arch->swa_period;
    return sliding_window > 0 && (period == 0 || l % period != period - 1);
  }
  // The window when every layer has it (KV behind it is never read again), else 0.
  int64_t full_window() const { return arch->swa_period == 0 ? sliding_window : 0; }
};

// Reads and checks the config. Missing required keys or tensors, or values that do not fit
// together, give a Status that names them.
Result<ModelConfig> model_config_from_gguf(const io::GgufFile& gguf);

}  // namespace tally
