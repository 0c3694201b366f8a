#include "plan/activations.h"

#include <algorithm>

#include <fmt/format.h>

namespace tally::plan {

namespace {

constexpr int64_t kF32 = 4;
constexpr int64_t kI32 = 4;
constexpr int64_t kI64 = 8;

void add_vec(std::vector<ActivationTerm>& out, const char* name, int64_t n, int64_t elem_bytes,
             const char* type) {
  out.push_back({name, fmt::format("[{}] {}", n, type), n * elem_bytes});
}

void add_mat(std::vector<ActivationTerm>& out, const char* name, int64_t rows, int64_t cols,
             int64_t elem_bytes, const char* type) {
  out.push_back({name, fmt::format("[{}][{}] {}", rows, cols, type), rows * cols * elem_bytes});
}

// The model's scratch (model/forward_scratch.h), f32 per token.
void add_scratch(std::vector<ActivationTerm>& t, const ActivationShape& s) {
  const int64_t n = s.n_tokens;
  const int64_t q_dim = s.n_heads * s.head_dim;
  const int64_t kv_dim = s.n_kv_heads * s.head_dim;
  add_mat(t, "hidden", n, s.n_embd, kF32, "f32");
  add_mat(t, "normed", n, s.n_embd, kF32, "f32");
  add_mat(t, "q", n, q_dim, kF32, "f32");
  add_mat(t, "k", n, kv_dim, kF32, "f32");
  add_mat(t, "v", n, kv_dim, kF32, "f32");
  add_mat(t, "attention out", n, q_dim, kF32, "f32");
  add_mat(t, "ffn gate", n, s.n_ff, kF32, "f32");
  add_mat(t, "ffn up", n, s.n_ff, kF32, "f32");
  add_mat(t, "rope cos", n, s.rope_dim, kF32, "f32");
  add_mat(t, "rope sin", n, s.rope_dim, kF32, "f32");
  if (s.n_expert > 0) {  // model/forward_scratch.h's MoE buffers
    const int64_t e = s.n_expert, k = s.n_expert_used;
    add_mat(t, "moe router logits", n, e, kF32, "f32");
    add_mat(t, "moe expert input", n, s.n_embd, kF32, "f32");
    add_mat(t, "moe expert output", n, s.n_embd, kF32, "f32");
    add_mat(t, "moe sum", n, s.n_embd, kF32, "f32");
    add_mat(t, "moe chosen weights", n, k, kF32, "f32");
    add_mat(t, "moe dispatch weights", n, k, kF32, "f32");
    add_vec(t, "moe probabilities", e, kF32, "f32");
    add_mat(t, "moe chosen experts", n, k, kI32, "i32");
    add_mat(t, "moe dispatch tokens", n, k, kI32, "i32");
    add_vec(t, "moe expert offsets, cursors", 2 * e + 1, kI32, "i32");
  }
  add_vec(t, "kv slots", n, kI64, "i64");
  add_vec(t, "block table views", n, kSpanBytes, "span");
}

}  // namespace

std::vector<ActivationTerm> activation_terms(const ActivationShape& s) {
  const int64_t n = s.n_tokens;
  const int64_t r = s.n_rows;
  const int64_t lr = s.n_logit_rows > 0 ? s.n_logit_rows : r;
  std::vector<ActivationTerm> t;
  // The batch the runner fills each step (model/batch.h).
  add_vec(t, "token ids", n, kI32, "i32");
  add_vec(t, "positions", n, kI32, "i32");
  add_vec(t, "sequence index", n, kI32, "i32");
  add_vec(t, "batch rows", r, kSpanBytes, "span");  // each row's block table
  add_vec(t, "logit rows", lr, kI32, "i32");         // token index of each logits row
  add_vec(t, "row logits", r, kI32, "i32");         // logits row of each batch row
  add_vec(t, "row last token", r, kI32, "i32");
  add_vec(t, "sample slots", r, kI32, "i32");       // logits row of each sample slot
  add_scratch(t, s);
  add_mat(t, "logits", lr, s.n_vocab, kF32, "f32");
  // The step's scheduler output carries each row's tokens and its whole block table (the
  // runner keeps no per-sequence copy); reused across steps, it grows to this over the first.
  add_vec(t, "step row tokens", n, kI32, "i32");
  t.back().at_start = false;
  add_mat(t, "step block tables", r, s.blocks_per_seq, kI32, "i32");
  t.back().at_start = false;
  return t;
}

std::vector<ActivationTerm> draft_activation_terms(const ActivationShape& s, int64_t max_draft) {
  const int64_t n = s.n_tokens;
  const int64_t r = std::min(s.n_rows, s.n_tokens);  // one batch row per scheduled row
  std::vector<ActivationTerm> t;
  add_vec(t, "draft token ids", n, kI32, "i32");
  add_vec(t, "draft positions", n, kI32, "i32");
  add_vec(t, "draft sequence index", n, kI32, "i32");
  add_vec(t, "draft batch rows", r, kSpanBytes, "span");
  add_vec(t, "draft logit rows", r, kI32, "i32");
  add_vec(t, "draft logit owners", r, kI64, "u64");
  add_scratch(t, s);
  add_mat(t, "draft logits", r, s.n_vocab, kF32, "f32");
  add_mat(t, "draft q", r * max_draft, s.n_vocab, kF32, "f32");
  return t;
}

int64_t activation_bytes(const std::vector<ActivationTerm>& terms) {
  int64_t n = 0;
  for (const auto& t : terms) n += t.bytes;
  return n;
}

int64_t activation_bytes_at_start(const std::vector<ActivationTerm>& terms) {
  int64_t n = 0;
  for (const auto& t : terms) n += t.at_start ? t.bytes : 0;
  return n;
}

}  // namespace tally::plan
