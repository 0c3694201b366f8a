#include "plan/activations.h"

#include <fmt/format.h>

namespace tally::plan {

namespace {

constexpr int64_t kF32 = 4;
constexpr int64_t kI32 = 4;

void add_vec(std::vector<ActivationTerm>& out, const char* name, int64_t n, const char* type) {
  out.push_back({name, fmt::format("[{}] {}", n, type), n * kI32});
}

void add_mat(std::vector<ActivationTerm>& out, const char* name, int64_t rows, int64_t cols,
             int64_t elem_bytes, const char* type) {
  out.push_back({name, fmt::format("[{}][{}] {}", rows, cols, type), rows * cols * elem_bytes});
}

}  // namespace

std::vector<ActivationTerm> activation_terms(const ActivationShape& s) {
  const int64_t n = s.n_tokens;
  const int64_t q_dim = s.n_heads * s.head_dim;
  const int64_t kv_dim = s.n_kv_heads * s.head_dim;
  std::vector<ActivationTerm> t;
  // The batch the runner prepares (int32).
  add_vec(t, "token ids", n, "i32");                                       // [n_tokens]
  add_vec(t, "positions", n, "i32");                                       // [n_tokens]
  add_vec(t, "kv slots", n, "i32");                                        // [n_tokens]
  add_mat(t, "block tables", s.n_seqs, s.blocks_per_seq, kI32, "i32");     // [n_seqs][blocks]
  add_vec(t, "sampled rows", s.n_sampled, "i32");                          // [n_sampled]
  // The model's scratch (f32). rope: cos and sin, head_dim/2 each, for every position.
  add_mat(t, "rope cos/sin", s.context, s.head_dim, kF32, "f32");          // [ctx][head_dim]
  add_mat(t, "hidden", n, s.n_embd, kF32, "f32");                          // [n_tokens][n_embd]
  add_mat(t, "normed", n, s.n_embd, kF32, "f32");                          // [n_tokens][n_embd]
  add_mat(t, "q", n, q_dim, kF32, "f32");                                  // [n_tokens][heads*hd]
  add_mat(t, "k", n, kv_dim, kF32, "f32");                                 // [n_tokens][kv*hd]
  add_mat(t, "v", n, kv_dim, kF32, "f32");                                 // [n_tokens][kv*hd]
  // One chunk of scores per (token, head) work item: online softmax over KV chunks.
  add_mat(t, "attention scores", n * s.n_heads, s.attention_chunk, kF32,   // [n_tokens*heads]
          "f32");                                                          //   [chunk]
  add_mat(t, "attention out", n, q_dim, kF32, "f32");                      // [n_tokens][heads*hd]
  // Output of the o and down projections before the residual add (the all-reduce buffer
  // under tensor parallelism).
  add_mat(t, "projection out", n, s.n_embd, kF32, "f32");                  // [n_tokens][n_embd]
  add_mat(t, "ffn gate", n, s.n_ff, kF32, "f32");                          // [n_tokens][n_ff]
  add_mat(t, "ffn up", n, s.n_ff, kF32, "f32");                            // [n_tokens][n_ff]
  add_mat(t, "logits", s.n_sampled, s.n_vocab, kF32, "f32");               // [n_sampled][n_vocab]
  return t;
}

int64_t activation_bytes(const std::vector<ActivationTerm>& terms) {
  int64_t n = 0;
  for (const auto& t : terms) n += t.bytes;
  return n;
}

}  // namespace tally::plan
