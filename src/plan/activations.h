// The activation buffers of one forward step with n_tokens tokens: the exact list a forward
// pass allocates (the runner's batch arrays and the model's scratch), so the engine's
// ForwardScratch and `tally plan` agree term by term. Sizes are per tensor-parallel rank:
// pass the per-rank head and ffn counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tally::plan {

// KV positions one attention work item scores at a time (online softmax over chunks).
inline constexpr int64_t kDefaultAttentionChunk = 256;

struct ActivationShape {
  int64_t n_tokens = 0;         // tokens in the step (all sequences together)
  int64_t n_sampled = 0;        // rows whose logits are computed (one per sampled sequence)
  int64_t n_seqs = 0;           // sequences with a block table
  int64_t blocks_per_seq = 0;   // block table width
  int64_t context = 0;          // longest position + 1 (rope table rows)
  int64_t n_embd = 0;
  int64_t n_heads = 0;          // query heads on this rank
  int64_t n_kv_heads = 0;       // KV heads on this rank
  int64_t head_dim = 0;
  int64_t n_ff = 0;             // ffn width on this rank
  int64_t n_vocab = 0;
  int64_t attention_chunk = kDefaultAttentionChunk;
};

struct ActivationTerm {
  std::string name;   // "q", "ffn gate", ...
  std::string shape;  // "[2048][4096] f32"
  int64_t bytes = 0;
};

// Every buffer, in forward order. Activations are f32; ids, positions, slots and block
// tables are int32.
std::vector<ActivationTerm> activation_terms(const ActivationShape& shape);
int64_t activation_bytes(const std::vector<ActivationTerm>& terms);

}  // namespace tally::plan
