// The weights of a model bound to their tensors in the GGUF: matrices are views into the
// mapped file (no copy, any computable type), except that the matrices of the layers and of
// an untied output whose type the backend prepares (Backend::can_prepare: the CPU's Q8_0 /
// Q4_0) are repacked at load time into the backend's own layout (the same bytes, owned);
// norm and bias vectors are f32 views, or owned f32 copies when the file stores them as
// f16/bf16 (or unaligned). Every tensor's type and shape is checked against the config when binding.
// Once a matrix is repacked, its pages in the mapping are released (GgufFile::
// release_tensor_pages), so the process holds each weight once: peak memory while loading is
// what the ledger counts plus the one tensor being repacked.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "base/status.h"
#include "io/gguf.h"
#include "model/model_config.h"

namespace tally {

struct LayerWeights {
  std::span<const float> attn_norm;  // [n_embd]
  WeightMatrix wq;                   // [q_dim][n_embd]
  WeightMatrix wk;                   // [kv_dim][n_embd]
  WeightMatrix wv;                   // [kv_dim][n_embd]
  std::span<const float> bq;         // [q_dim]; empty unless the arch has qkv biases
  std::span<const float> bk;         // [kv_dim]
  std::span<const float> bv;         // [kv_dim]
  std::span<const float> q_norm;     // [head_dim]; empty unless the arch norms q and k per head
  std::span<const float> k_norm;     // [head_dim]
  WeightMatrix wo;                   // [n_embd][q_dim]
  std::span<const float> attn_post_norm;  // [n_embd]; empty unless the arch has post norms
  std::span<const float> ffn_norm;   // [n_embd]
  WeightMatrix w_gate;               // [n_ff][n_embd]  (MoE: the shared expert's, n_ff_shexp
  WeightMatrix w_up;                 // [n_ff][n_embd]   rows; unset without one)
  WeightMatrix w_down;               // [n_embd][n_ff]
  // Mixture of experts (empty for a dense FFN):
  WeightMatrix router;               // [n_expert][n_embd] ffn_gate_inp
  std::vector<WeightMatrix> exp_gate;  // n_expert of [n_ff_exp][n_embd]
  std::vector<WeightMatrix> exp_up;    // n_expert of [n_ff_exp][n_embd]
  std::vector<WeightMatrix> exp_down;  // n_expert of [n_embd][n_ff_exp]
  WeightMatrix shexp_gate_inp;       // [1][n_embd]: the shared expert's sigmoid gate (qwen2moe)
  std::span<const float> ffn_post_norm;  // [n_embd]; empty unless the arch has post norms
};

struct ModelWeights {
  WeightMatrix token_embd;           // [n_vocab][n_embd], read a row at a time
  std::span<const float> output_norm;  // [n_embd]
  WeightMatrix output;               // [n_vocab][n_embd]; == token_embd when tied
  std::span<const float> rope_freqs;  // [rope_dim/2] frequency divisors, or empty
  std::span<const float> rope_factors_long;   // [rope_dim/2] LongRoPE divisors, or empty
  std::span<const float> rope_factors_short;  // [rope_dim/2]
  std::vector<LayerWeights> layers;
  std::vector<std::vector<float>> owned;  // storage of converted vectors (spans point here)
  std::vector<std::unique_ptr<PreparedWeights>> repacked;  // storage of repacked matrices
                                                          // (views point here)
  int64_t mapped_bytes = 0;               // bytes used in place from the file's mapping
                                          // (repacked sources excluded: see released_bytes)
  int64_t owned_bytes = 0;                // bytes converted or repacked into memory (and the
                                          // transformed tensors of a Hugging Face directory)
  int64_t repacked_bytes = 0;             // of owned_bytes, the repacked matrices
  int64_t released_bytes = 0;             // mapped pages of repacked sources dropped after the
                                          // copy (whole pages; 0 for a file not mapped)
};

// Called after each layer is bound (mapped, converted, repacked): done of total layers.
using LoadProgress = std::function<void(int64_t done, int64_t total)>;

// `backend` prepares (repacks) the matrices it has a layout of its own for.
Result<ModelWeights> bind_weights(const io::GgufFile& gguf, const ModelConfig& config,
                                  const Backend& backend, const LoadProgress& progress = {});

}  // namespace tally
