// What distinguishes the llama-family architectures tally runs: a row of flags per
// `general.architecture` value. The forward pass reads these flags; adding an architecture
// that fits the family is one new row in arch.cpp (and a test).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "backend/backend_types.h"

namespace tally {

enum class FfnActivation : uint8_t {
  kSilu,      // SwiGLU: silu(gate) * up (llama, qwen)
  kGeluTanh,  // GeGLU: gelu_pytorch_tanh(gate) * up (gemma)
};

struct ArchTraits {
  std::string_view name;          // general.architecture, also the metadata key prefix
  RopeLayout rope_layout;         // which elements of a head rope rotates together
  bool qkv_bias;                  // blk.N.attn_{q,k,v}.bias present (and required)
  bool qk_norm;                   // blk.N.attn_{q,k}_norm.weight [head_dim]: each head of q and
                                  // k RMS-normed before rope (qwen3, gemma3)
  FfnActivation ffn_act = FfnActivation::kSilu;
  // phi3: blk.N.ffn_up.weight holds the gate rows then the up rows ([n_embd, 2 * n_ff], no
  // ffn_gate), and blk.N.attn_qkv.weight, when present, the q, k and v rows.
  bool fused_projections = false;
  bool embd_scale = false;        // embeddings times sqrt(n_embd) (gemma)
  bool post_norms = false;        // blk.N.post_attention_norm / post_ffw_norm: each block's
                                  // output RMS-normed before its residual add (gemma2, gemma3)
  // Sliding-window layers: layer l is local when l % swa_period != swa_period - 1 (gemma2: 2,
  // every other layer from 0; gemma3: 6, five local to one global); 0: none.
  int64_t swa_period = 0;
  int64_t default_window = 0;     // when <arch>.attention.sliding_window is absent (0: required)
  float swa_rope_base = 0.0f;     // local layers' rope base, unscaled (gemma3); 0: the model's
  float default_attn_softcap = 0.0f;   // when <arch>.attn_logit_softcapping is absent
  float default_final_softcap = 0.0f;  // when <arch>.final_logit_softcapping is absent
  // llama.cpp's query scale for gemma: 1/sqrt(n_embd / n_heads) for the model with this many
  // layers (the 27B; query_pre_attn_scalar is not in the GGUF), else 1/sqrt(head_dim). 0: none.
  int64_t wide_query_scale_layers = 0;
  // Mixture of experts: the FFN of every layer is a router over <arch>.expert_count experts,
  // of which each token uses the expert_used_count with the highest softmax probabilities.
  // llama: only when the file declares experts (Mixtral); qwen2moe, qwen3moe: required.
  bool moe_required = false;
  bool moe_optional = false;       // experts allowed but not required (llama: Mixtral)
  bool moe_norm_topk = true;       // the k chosen probabilities renormalised to sum to 1
                                   // (Mixtral, Qwen3-MoE; Qwen2-MoE's norm_topk_prob is false)
  bool moe_shared_expert = false;  // plus a dense shared expert scaled by sigmoid(x·gate_shexp)
};

// The row for `name`, or nullptr when tally does not run that architecture.
const ArchTraits* find_arch(std::string_view name);
// Every supported architecture (for messages and docs).
std::span<const ArchTraits> supported_archs();

}  // namespace tally
