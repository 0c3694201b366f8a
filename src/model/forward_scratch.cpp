#include "model/forward_scratch.h"

#include "base/check.h"

namespace tally {

namespace {

// Floats per token, in the order the buffers are laid out.
int64_t floats_per_token(const ModelConfig& c) {
  return 2 * c.n_embd + 2 * c.q_dim() + 2 * c.kv_dim() + 2 * c.n_ff + 2 * c.rope_dim;
}

}  // namespace

int64_t ForwardScratch::bytes_for(const ModelConfig& c, int64_t max_tokens) {
  return max_tokens * (floats_per_token(c) * static_cast<int64_t>(sizeof(float)) +
                       static_cast<int64_t>(sizeof(int64_t) + sizeof(BlockTableView)));
}

ForwardScratch::ForwardScratch(const ModelConfig& c, int64_t max_tokens)
    : config_(c),
      max_tokens_(max_tokens),
      f32_(static_cast<size_t>(floats_per_token(c) * max_tokens)),
      slots_(static_cast<size_t>(max_tokens)),
      tables_(static_cast<size_t>(max_tokens)) {
  TALLY_CHECK(max_tokens > 0, "scratch for {} tokens", max_tokens);
  float* p = f32_.data();
  const auto take = [&](int64_t per_token) {
    float* out = p;
    p += per_token * max_tokens;
    return out;
  };
  x = take(c.n_embd);
  xn = take(c.n_embd);
  q = take(c.q_dim());
  k = take(c.kv_dim());
  v = take(c.kv_dim());
  att = take(c.q_dim());
  gate = take(c.n_ff);
  up = take(c.n_ff);
  rope_cos = take(c.rope_dim);
  rope_sin = take(c.rope_dim);
  TALLY_CHECK(p == f32_.data() + f32_.size(), "scratch layout out of step with floats_per_token");
  slots = slots_.data();
  tables = tables_.data();
}

bool ForwardScratch::fits(const ModelConfig& c) const {
  return c.n_embd == config_.n_embd && c.q_dim() == config_.q_dim() && c.kv_dim() == config_.kv_dim() &&
         c.n_ff == config_.n_ff && c.rope_dim == config_.rope_dim;
}

}  // namespace tally
