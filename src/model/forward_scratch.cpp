#include "model/forward_scratch.h"

#include "base/check.h"

namespace tally {

namespace {

// Floats per token, in the order the buffers are laid out.
int64_t floats_per_token(const ModelConfig& c) {
  const int64_t moe = c.is_moe() ? c.n_expert + 3 * c.n_embd + 2 * c.n_expert_used : 0;
  return 2 * c.n_embd + 2 * c.q_dim() + 2 * c.kv_dim() + 2 * c.ffn_hidden_width() + 2 * c.rope_dim + moe;
}

// The MoE floats and int32s that do not grow with the tokens (offsets, cursor, probs).
int64_t moe_fixed_floats(const ModelConfig& c) { return c.is_moe() ? c.n_expert : 0; }
int64_t moe_i32_count(const ModelConfig& c, int64_t max_tokens) {
  return c.is_moe() ? 2 * max_tokens * c.n_expert_used + 2 * c.n_expert + 1 : 0;
}

}  // namespace

int64_t ForwardScratch::bytes_for(const ModelConfig& c, int64_t max_tokens) {
  return (max_tokens * floats_per_token(c) + moe_fixed_floats(c)) * static_cast<int64_t>(sizeof(float)) +
         moe_i32_count(c, max_tokens) * static_cast<int64_t>(sizeof(int32_t)) +
         max_tokens * static_cast<int64_t>(sizeof(int64_t) + sizeof(BlockTableView));
}

ForwardScratch::ForwardScratch(const ModelConfig& c, int64_t max_tokens)
    : config_(c),
      max_tokens_(max_tokens),
      f32_(static_cast<size_t>(floats_per_token(c) * max_tokens + moe_fixed_floats(c))),
      slots_(static_cast<size_t>(max_tokens)),
      moe_i32_(static_cast<size_t>(moe_i32_count(c, max_tokens))),
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
  gate = take(c.ffn_hidden_width());
  up = take(c.ffn_hidden_width());
  rope_cos = take(c.rope_dim);
  rope_sin = take(c.rope_dim);
  if (c.is_moe()) {
    const int64_t k = c.n_expert_used;
    moe_logits = take(c.n_expert);
    moe_in = take(c.n_embd);
    moe_out = take(c.n_embd);
    moe_acc = take(c.n_embd);
    routing.chosen_weight = take(k);
    routing.weights = take(k);
    routing.probs = p;
    p += c.n_expert;
    int32_t* q = moe_i32_.data();
    routing.chosen = q;
    routing.tokens = q + k * max_tokens;
    routing.expert_begin = q + 2 * k * max_tokens;
    routing.cursor = routing.expert_begin + c.n_expert + 1;
  }
  TALLY_CHECK(p == f32_.data() + f32_.size(), "scratch layout out of step with floats_per_token");
  slots = slots_.data();
  tables = tables_.data();
}

bool ForwardScratch::fits(const ModelConfig& c) const {
  return c.n_embd == config_.n_embd && c.q_dim() == config_.q_dim() && c.kv_dim() == config_.kv_dim() &&
         c.ffn_hidden_width() == config_.ffn_hidden_width() && c.rope_dim == config_.rope_dim &&
         c.n_expert == config_.n_expert && c.n_expert_used == config_.n_expert_used;
}

}  // namespace tally
