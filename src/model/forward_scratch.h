// The activation buffers of forward(), sized once for the largest step (max_tokens tokens) so
// that no step allocates. One ForwardScratch per concurrent forward().
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend_types.h"
#include "model/model_config.h"
#include "model/moe_routing.h"

namespace tally {

class ForwardScratch {
 public:
  ForwardScratch(const ModelConfig& config, int64_t max_tokens);
  ForwardScratch(ForwardScratch&&) noexcept = default;
  ForwardScratch& operator=(ForwardScratch&&) noexcept = default;
  ForwardScratch(const ForwardScratch&) = delete;
  ForwardScratch& operator=(const ForwardScratch&) = delete;

  // What the constructor allocates, without allocating (for the memory ledger and `plan`).
  static int64_t bytes_for(const ModelConfig& config, int64_t max_tokens);
  int64_t bytes() const { return bytes_for(config_, max_tokens_); }
  int64_t max_tokens() const { return max_tokens_; }
  // Whether these buffers have the widths of `config`'s model.
  bool fits(const ModelConfig& config) const;

  // Buffers, T = max_tokens. Used by forward() only.
  float* x = nullptr;         // [T][n_embd] residual stream
  float* xn = nullptr;        // [T][n_embd] normed input of a block, then the block's output
  float* q = nullptr;         // [T][n_heads][head_dim]
  float* k = nullptr;         // [T][n_kv_heads][head_dim]
  float* v = nullptr;         // [T][n_kv_heads][head_dim]
  float* att = nullptr;       // [T][n_heads][head_dim] attention output
  float* gate = nullptr;      // [T][ffn_hidden_width]  (n_ff, or the widest expert)
  float* up = nullptr;        // [T][ffn_hidden_width]
  float* rope_cos = nullptr;  // [T][rope_dim]
  float* rope_sin = nullptr;  // [T][rope_dim]
  int64_t* slots = nullptr;   // [T] KV slot of each token
  BlockTableView* tables = nullptr;  // [T] block table of each sequence
  // Mixture of experts only (null for a dense model); E = n_expert, k = n_expert_used:
  float* moe_logits = nullptr;  // [T][E] router outputs
  float* moe_in = nullptr;      // [T][n_embd] one expert's tokens' normed inputs, gathered
  float* moe_out = nullptr;     // [T][n_embd] that expert's outputs
  float* moe_acc = nullptr;     // [T][n_embd] each token's weighted sum of its experts
  MoeRouting routing;           // chosen/weights [T][k], tokens/weights [T * k], offsets [E + 1],
                                // cursor [E], probs [E]

 private:
  ModelConfig config_;
  int64_t max_tokens_;
  std::vector<float> f32_;
  std::vector<int64_t> slots_;
  std::vector<int32_t> moe_i32_;
  std::vector<BlockTableView> tables_;
};

}  // namespace tally
