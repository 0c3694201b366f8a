// A Hugging Face config.json -> the GGUF metadata llama.cpp's convert_hf_to_gguf.py writes for
// the same model (general.architecture and the <arch>.* keys), plus what the tensor mapping
// (hf_tensors.h) needs to know about the model. The architecture comes from "architectures"
// (else "model_type"); one that tally does not run, a rope_scaling type the model cannot carry
// (dynamic, longrope outside phi3), or a feature tally lacks (Qwen2's use_sliding_window, Gemma
// 3's other local rope base) is one kUnsupported error naming it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "io/gguf_writer.h"

namespace tally {

struct HfModelInfo {
  std::string hf_arch;       // "LlamaForCausalLM", ...
  std::string arch;          // general.architecture: "llama", "qwen2", ...
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t n_expert = 0;      // 0: dense
  bool mixtral_experts = false;  // block_sparse_moe.experts.E.w1/w2/w3 (else mlp.experts.E.*_proj)
  bool shared_expert = false;    // mlp.shared_expert.* and mlp.shared_expert_gate (qwen2moe)
  bool permute_qk = false;   // llama: q/k rows to the GGUF's adjacent-pair rope order
  bool norm_plus_one = false;  // gemma: every *norm.weight stored as 1 + w
  bool gemma_norms = false;    // pre/post feed-forward norms (gemma2, gemma3)
  bool fused = false;          // phi3: qkv_proj and gate_up_proj
  bool qk_norm = false;        // self_attn.q_norm / k_norm
  bool qkv_bias = false;
  bool tied = false;           // tie_word_embeddings: no output.weight
  std::vector<float> rope_freqs;  // llama3 rope scaling: rope_freqs.weight (empty: none)
  std::vector<float> rope_factors_long;   // phi3 LongRoPE: rope_factors_long.weight (empty: none)
  std::vector<float> rope_factors_short;  // phi3 LongRoPE: rope_factors_short.weight
};

// Reads `config` and writes the model's keys (not the tokenizer's, not general.file_type) into
// `w`; `name` is general.name.
Result<HfModelInfo> hf_config_to_gguf(const nlohmann::json& config, const std::string& name,
                                      io::GgufWriter& w);

}  // namespace tally
