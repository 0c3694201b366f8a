// The hyper-parameters of a llama-family model, read from GGUF metadata
// (`<arch>.embedding_length`, ...) and the shape of the token embedding.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "io/gguf.h"
#include "model/arch.h"

namespace tally {

enum class RopeScalingType { kNone, kLinear, kLlama3 };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  float factor = 1.0f;                   // linear and llama3
  int64_t original_context_length = 0;   // llama3
  float low_freq_factor = 1.0f;          // llama3
  float high_freq_factor = 4.0f;         // llama3
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
  bool tied_output = false;     // no output.weight: logits use token_embd.weight
  // Gemma (0 / 0.0 where the arch has none; see ArchTraits):
  int64_t sliding_window = 0;        // <arch>.attention.sliding_window, for the local layers
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
  int64_t ffn_hidden_width() const { return is_moe() ? std::max(n_ff_exp, n_ff_shexp) : n_ff; }
  // Whether layer l attends over the sliding window only.
  bool is_local_layer(int64_t l) const {
    const int64_t period = arch->swa_period;
    return period > 0 && sliding_window > 0 && l % period != period - 1;
  }
};

// Reads and checks the config. Missing required keys or tensors, or values that do not fit
// together, give a Status that names them.
Result<ModelConfig> model_config_from_gguf(const io::GgufFile& gguf);

}  // namespace tally
