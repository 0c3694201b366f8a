// The activation buffers of forward(), sized once for the largest step (max_tokens tokens) so
// that no step allocates. One ForwardScratch per concurrent forward().
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend_types.h"
#include "model/model_config.h"

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
  float* gate = nullptr;      // [T][n_ff]
  float* up = nullptr;        // [T][n_ff]
  float* rope_cos = nullptr;  // [T][rope_dim]
  float* rope_sin = nullptr;  // [T][rope_dim]
  int64_t* slots = nullptr;   // [T] KV slot of each token
  BlockTableView* tables = nullptr;  // [T] block table of each sequence

 private:
  ModelConfig config_;
  int64_t max_tokens_;
  std::vector<float> f32_;
  std::vector<int64_t> slots_;
  std::vector<BlockTableView> tables_;
};

}  // namespace tally
