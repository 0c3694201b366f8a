// The tensors of a llama-family GGUF under llama.cpp's names (its LLM_TENSOR_NAMES table):
// the one list the model loader, the planner, the llama2.c importer and the synthetic writer
// name tensors by.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tally::io {

enum class GgufTensor : uint8_t {
  // model-wide: "<name>"
  kTokenEmbd,   // token_embd.weight
  kOutputNorm,  // output_norm.weight
  kOutput,      // output.weight
  kRopeFreqs,   // rope_freqs.weight
  kRopeFactorsLong,   // rope_factors_long.weight  (phi3 LongRoPE: per-pair divisors, long context)
  kRopeFactorsShort,  // rope_factors_short.weight (phi3 LongRoPE: within the original context)
  // per block: "blk.<layer>.<name>"
  kAttnNorm,    // attn_norm.weight
  kAttnQ,       // attn_q.weight
  kAttnK,       // attn_k.weight
  kAttnV,       // attn_v.weight
  kAttnQBias,   // attn_q.bias
  kAttnKBias,   // attn_k.bias
  kAttnVBias,   // attn_v.bias
  kAttnQNorm,   // attn_q_norm.weight (qwen3: per-head RMSNorm of q, [head_dim])
  kAttnKNorm,   // attn_k_norm.weight
  kAttnOut,     // attn_output.weight
  kAttnPostNorm,  // post_attention_norm.weight (gemma2/3: norm of the attention output)
  kFfnNorm,     // ffn_norm.weight
  kFfnGate,     // ffn_gate.weight
  kFfnUp,       // ffn_up.weight
  kFfnDown,     // ffn_down.weight
  kFfnPostNorm,   // post_ffw_norm.weight (gemma2/3: norm of the ffn output)
  kAttnQkv,       // attn_qkv.weight (phi3: q, k and v rows in one matrix)
  // Mixture of experts (qwen2moe, qwen3moe, mixtral under llama):
  kFfnGateInp,    // ffn_gate_inp.weight   router [n_embd, n_expert]
  kFfnGateExps,   // ffn_gate_exps.weight  [n_embd, n_ff_exp, n_expert]
  kFfnUpExps,     // ffn_up_exps.weight    [n_embd, n_ff_exp, n_expert]
  kFfnDownExps,   // ffn_down_exps.weight  [n_ff_exp, n_embd, n_expert]
  kFfnGateInpShexp,  // ffn_gate_inp_shexp.weight  shared expert's gate [n_embd] (qwen2moe)
  kFfnGateShexp,  // ffn_gate_shexp.weight [n_embd, n_ff_shexp]
  kFfnUpShexp,    // ffn_up_shexp.weight   [n_embd, n_ff_shexp]
  kFfnDownShexp,  // ffn_down_shexp.weight [n_ff_shexp, n_embd]
};

// Whether `t` is one of the per-block tensors.
bool gguf_tensor_per_block(GgufTensor t);

// "token_embd.weight"; "blk.3.attn_q.weight" for a per-block tensor (layer >= 0, checked).
std::string gguf_tensor_name(GgufTensor t, int64_t layer = -1);

// The per-expert tensor that older llama.cpp conversions of Mixtral wrote instead of a merged
// 3-D one: kFfnGateExps / kFfnUpExps / kFfnDownExps of `layer` -> "blk.<layer>.ffn_gate.<expert>.weight"
// (ffn_up, ffn_down), one [n_in, n_out] matrix per expert.
std::string gguf_expert_tensor_name(GgufTensor merged, int64_t layer, int64_t expert);

struct GgufTensorId {
  GgufTensor tensor = GgufTensor::kTokenEmbd;
  int layer = -1;  // -1 for the model-wide tensors
};

// The tensor a GGUF name stands for; nullopt for a name outside the table.
std::optional<GgufTensorId> gguf_tensor_parse(std::string_view name);

// A per-expert name (gguf_expert_tensor_name's): the merged tensor it is one slice of
// (kFfnGateExps, kFfnUpExps, kFfnDownExps), its block and its expert; nullopt otherwise.
struct GgufExpertTensorId {
  GgufTensor merged = GgufTensor::kFfnGateExps;
  int layer = -1;
  int expert = -1;
};
std::optional<GgufExpertTensorId> gguf_expert_tensor_parse(std::string_view name);

}  // namespace tally::io
