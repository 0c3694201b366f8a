// Small random llama-family models written as GGUF bytes in memory (for tests that need a
// model other than stories260K, or a broken one).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "io/gguf_writer.h"
#include "tensor/dtype.h"

namespace tally_test {

struct TinySpec {
  std::string arch = "llama";
  int64_t n_vocab = 40;
  int64_t n_embd = 32;
  int64_t n_ff = 48;
  int64_t n_layers = 2;
  int64_t n_heads = 4;
  int64_t n_kv_heads = 2;
  int64_t head_dim = 8;
  int64_t context_length = 256;
  float freq_base = 10000.0f;
  float eps = 1e-5f;
  bool biases = false;      // blk.N.attn_{q,k,v}.bias
  bool tied = false;        // no output.weight
  bool qk_norm = false;     // blk.N.attn_{q,k}_norm.weight [head_dim]
  bool post_norms = false;  // blk.N.post_attention_norm / post_ffw_norm.weight [n_embd]
  bool fused = false;       // phi3: attn_qkv [n_embd, q + 2 kv], ffn_up [n_embd, 2 n_ff], no gate
  // Mixture of experts (n_expert > 0): <arch>.expert_* keys, ffn_gate_inp and the 3-D
  // ffn_{gate,up,down}_exps instead of ffn_gate/up/down; with n_ff_shexp > 0 also the shared
  // expert (ffn_gate_inp_shexp [n_embd], ffn_{gate,up,down}_shexp).
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_exp = 0;    // 0: no expert_feed_forward_length key (the experts are n_ff wide)
  int64_t n_ff_shexp = 0;
  bool split_experts = false;  // one blk.N.ffn_{gate,up,down}.E.weight per expert (old Mixtral
                               // conversions), same values as the merged *_exps form
  tally::DType vector_type = tally::DType::kF32;  // of norms and biases
  tally::DType matrix_type = tally::DType::kF32;  // of the block matrices
  uint32_t seed = 1;
  std::set<std::string> skip_keys;     // metadata keys (without the arch prefix) left out
  std::set<std::string> skip_tensors;  // tensors left out
  std::function<void(tally::io::GgufWriter&)> extra;  // more keys or tensors
};

// GGUF v3 bytes of a model with N(0, 1/n_in) matrices, norms near 1 and small biases.
std::vector<uint8_t> make_tiny_gguf(const TinySpec& spec);

}  // namespace tally_test
