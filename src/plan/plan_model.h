// The shapes of a model that decide its memory: hyper-parameters and the list of its weight
// tensors. A PlanModel comes from a preset (plan_presets.h), an HF config.json (hf_config.h)
// or a GGUF file (gguf_source.h); `tally plan` never loads weights, only these shapes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace tally::plan {

// What a weight tensor is for; decides how tensor parallelism splits it and which type a
// mixed quantization (q4_k_m) gives it.
enum class TensorRole {
  kTokenEmbd,  // [n_vocab][n_embd]
  kOutput,     // [n_vocab][n_embd] (absent when tied to the embedding)
  kNorm,       // [n_embd] (attention, ffn and final norms); [head_dim] for q/k norms
  kAttnQ,      // [n_heads * head_dim][n_embd]
  kAttnK,      // [n_kv_heads * head_dim][n_embd]
  kAttnV,      // [n_kv_heads * head_dim][n_embd]
  kAttnOut,    // [n_embd][n_heads * head_dim]
  kBiasQ,      // [n_heads * head_dim]
  kBiasK,      // [n_kv_heads * head_dim]
  kBiasV,      // [n_kv_heads * head_dim]
  kFfnGate,    // [n_ff][n_embd]
  kFfnUp,      // [n_ff][n_embd]
  kFfnDown,    // [n_embd][n_ff]
  kOther,      // anything else a file holds (kept whole on every rank)
};
const char* tensor_role_name(TensorRole role);

// One weight tensor. Dimensions in ggml order: n_cols is the contiguous row length (the
// input features of a matrix), n_rows the number of rows (1 for a vector).
struct PlanTensor {
  std::string name;  // GGUF naming: "blk.3.attn_q.weight"
  TensorRole role = TensorRole::kOther;
  int layer = -1;    // block index, -1 outside the blocks
  int64_t n_cols = 0;
  int64_t n_rows = 1;
  std::optional<DType> file_type;  // the type stored in a GGUF file
  int64_t file_bytes = 0;          // its real size in that file (0 when not from a file)
  // An expert tensor (3-D in GGUF: [n_cols, n_rows / n_experts, n_experts]); 1 for one expert's
  // own matrix (blk.N.ffn_gate.E.weight, old Mixtral conversions); 0 for other 1-D/2-D tensors.
  int64_t n_experts = 0;

  int64_t n_elements() const { return n_cols * n_rows; }
  bool is_vector() const { return n_rows == 1; }
};

struct PlanModel {
  std::string name;          // preset name or file path
  std::string source;        // "preset", "gguf" or "hf-config"
  std::string architecture;  // "llama", "qwen2", ...
  int64_t n_layers = 0;
  int64_t n_embd = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t rope_dim = 0;          // rotated dims per head; 0 = head_dim
  int64_t n_ff = 0;
  int64_t n_vocab = 0;
  int64_t context_length = 0;  // the trained context
  int64_t kv_window = 0;       // every layer's sliding window (llama with one): the KV a
                               // sequence holds is capped (kv/kv_cache_manager.h); 0: none
  bool tied_embeddings = false;
  bool qkv_bias = false;                // Qwen2-style biases on q, k, v
  bool qk_norm = false;                 // Qwen3-style per-head RMSNorm weights of q and k
  bool post_norms = false;              // Gemma-style norms of the attention and ffn outputs
  // phi3: q, k and v in one attn_qkv [q + 2 kv][n_embd], and gate then up rows in one
  // ffn_up [2 n_ff][n_embd] (no ffn_gate).
  bool fused_projections = false;
  // Mixture of experts (n_expert == 0: dense): experts per layer, per token, their width and
  // the shared expert's (0: none). The ffn of each layer is then the router and the experts.
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_exp = 0;
  int64_t n_ff_shexp = 0;
  std::optional<DType> native_type;     // torch_dtype of a config.json, when given
  std::vector<PlanTensor> tensors;      // every weight

  int64_t n_params() const;
  // Width of the step's ffn hidden buffers: n_ff, or for MoE the widest expert.
  int64_t ffn_hidden_width() const { return n_expert > 0 ? std::max(n_ff_exp, n_ff_shexp) : n_ff; }
  // True when every tensor carries its size in a file (a GGUF source).
  bool has_file_bytes() const;
  // Sum of the tensors' sizes in the file (0 unless has_file_bytes()).
  int64_t file_weight_bytes() const;
};

// Whether t is an MoE router (blk.N.ffn_gate_inp.weight).
bool plan_tensor_is_router(const PlanTensor& t);

// Checks the hyper-parameters (all positive, heads divisible by kv heads).
Status plan_model_validate(const PlanModel& model);

// The tensors of a llama-style decoder (llama, mistral, qwen2, qwen3, phi3) from the
// hyper-parameters: per block attn_norm, q, k, v (phi3: one qkv), (q/k/v biases), (q/k norms), o,
// (post-attention norm), ffn_norm, gate, up, down (phi3: gate and up in one up) (MoE: router,
// the 3-D gate/up/down experts, the shared expert and its gate); plus token_embd, output_norm
// and output (unless tied).
std::vector<PlanTensor> plan_model_shape_tensors(const PlanModel& model);

// Validates `model` and fills its tensor list from the shapes.
Result<PlanModel> plan_model_finish(PlanModel model);

}  // namespace tally::plan
