// An independent reference forward for the tests, in the manner of llama2.c's run.c: plain
// scalar loops, one token at a time, its own contiguous KV cache, sums accumulated in f64. It
// reads the weights straight from the GGUF by tensor name.
#pragma once

#include <string>
#include <vector>

#include "io/gguf.h"

namespace tally_test {

struct RefSpec {
  int dim = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_size = 0, vocab = 0;
  float eps = 1e-5f;
  float freq_base = 10000.0f;
  bool neox = false;    // rope pairs (i, i + head_size/2) instead of (2i, 2i + 1)
  bool biases = false;  // q, k, v biases
  bool tied = false;    // logits from token_embd.weight
  bool qk_norm = false;  // per-head RMSNorm of q and k before rope (qwen3, gemma3)
  bool fused = false;    // phi3: q/k/v rows in attn_qkv, gate/up rows in ffn_up
  // Gemma:
  bool embd_scale = false;   // embedding times sqrt(dim)
  bool gelu = false;         // gelu_tanh(gate) * up instead of silu(gate) * up
  bool post_norms = false;   // post_attention_norm / post_ffw_norm on the block outputs
  int swa_period = 0;        // layer l local when l % swa_period != swa_period - 1
  int window = 0;            // local layers see the last `window` positions
  bool all_local = false;    // every layer is local (llama with a window)
  float local_freq_base = 0;     // local layers' rope base (0: freq_base)
  float rope_linear_factor = 1;  // global layers' frequencies divided by this
  // Long-context rope scaling of the global layers, computed in f64 (Hugging Face's formulas):
  std::vector<double> rope_divisors{};  // LongRoPE: frequency i divided by rope_divisors[i]
  double yarn_factor = 0;             // YaRN (0: none), with its original context and betas
  int yarn_orig_ctx = 0;
  double yarn_beta_fast = 32, yarn_beta_slow = 1, yarn_ext_factor = 1;
  double rope_mscale = 1;  // cos and sin times this (YaRN's / LongRoPE's attention factor)
  double score_divisor = 0;  // 0: sqrt(head_size)
  double attn_softcap = 0;   // scores -> cap * tanh(score / cap)
  double final_softcap = 0;  // logits -> cap * tanh(logit / cap)
  // Mixture of experts (n_expert > 0): softmax over ffn_gate_inp's logits, the top n_used
  // (renormalised when moe_norm), each an FFN of width n_ff_exp from the 3-D *_exps tensors;
  // plus, with n_ff_shexp > 0, the shared expert times sigmoid(ffn_gate_inp_shexp · x).
  int n_expert = 0, n_used = 0, n_ff_exp = 0, n_ff_shexp = 0;
  bool moe_norm = false;
};

class RefModel {
 public:
  RefModel(const tally::io::GgufFile& gguf, const RefSpec& spec, int max_seq);
  // Logits [vocab] of `token` at `pos` (positions must come in order 0, 1, 2, ...).
  std::vector<float> step(int token, int pos);

 private:
  std::vector<float> tensor(const std::string& name) const;
  // Rows [first, first + n_rows) of a matrix of n_in columns.
  std::vector<float> rows(const std::string& name, int first, int n_rows, int n_in) const;
  std::vector<float> matvec(const std::vector<float>& w, const std::vector<float>& x, int n_out) const;
  void rope(float* vec, int n_heads, int pos, bool local) const;
  // The scaled path of rope(): frequencies and angles in f64.
  void rope_scaled(float* vec, int n_heads, int pos) const;
  bool local_layer(int layer) const;
  void attention_block(int layer, int pos, std::vector<float>& x);
  void ffn_block(int layer, std::vector<float>& x) const;
  // silu(gate · xb) * (up · xb) through down: gate, up [hidden][dim], down [dim][hidden].
  std::vector<double> swiglu(const std::vector<float>& gate, const std::vector<float>& up,
                             const std::vector<float>& down, const std::vector<float>& xb, int hidden) const;
  std::vector<double> moe_ffn(int layer, const std::vector<float>& xb) const;
  void attend(int layer, int pos, const std::vector<float>& q, std::vector<float>& out) const;

  const tally::io::GgufFile& gguf_;
  RefSpec s_;
  int max_seq_;
  std::vector<std::vector<float>> k_cache_, v_cache_;  // [layer][pos][kv_dim]
};

}  // namespace tally_test
