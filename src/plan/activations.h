// The buffers of one forward step with n_tokens tokens: the runner's batch arrays, the model's
// scratch and the logits, term by term. This list is the one home of those sizes: `tally plan`
// prints it, the engine's ledger "buffers" line is its sum, and the runner checks at creation
// that what it allocated is exactly the terms marked at_start (runner/batch_runner.cpp).
// Sizes are per tensor-parallel rank: pass the per-rank head and ffn counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tally::plan {

struct ActivationShape {
  int64_t n_tokens = 0;        // tokens in the step (all sequences together)
  int64_t n_rows = 0;          // sequences in the step; each has one logits row
  int64_t n_logit_rows = 0;    // logits rows (speculation: a row's drafts too); 0 = n_rows
  int64_t n_seqs = 0;          // sequences resident at once
  int64_t context = 0;         // tokens per sequence
  int64_t blocks_per_seq = 0;  // KV blocks per sequence (block table width)
  int64_t n_embd = 0;
  int64_t n_heads = 0;         // query heads on this rank
  int64_t n_kv_heads = 0;      // KV heads on this rank
  int64_t head_dim = 0;
  int64_t rope_dim = 0;        // rotated dims per head
  int64_t n_ff = 0;            // ffn hidden width on this rank (MoE: the widest expert)
  int64_t n_vocab = 0;
  int64_t n_expert = 0;        // mixture of experts: experts per layer (0: dense)
  int64_t n_expert_used = 0;   // experts per token
};

struct ActivationTerm {
  std::string name;   // "q", "ffn gate", ...
  std::string shape;  // "[2048][4096] f32"
  int64_t bytes = 0;
  // Allocated when the runner is created; otherwise as sequences arrive (their token lists
  // and block tables), at most these bytes.
  bool at_start = true;
};

// Bytes of a pointer + length (std::span, the block table views) on this platform.
inline constexpr int64_t kSpanBytes = 16;

// Every buffer: the batch arrays, the forward scratch in forward order, the logits, then the
// per-sequence state.
std::vector<ActivationTerm> activation_terms(const ActivationShape& shape);
// The draft model's buffers (engine/draft_model_runner.h), for a draft model of this shape
// (tp 1), steps of n_tokens tokens and n_rows rows, up to max_draft drafts per row: its forward
// scratch, one pass's batch arrays, and its logits and q rows.
std::vector<ActivationTerm> draft_activation_terms(const ActivationShape& shape,
                                                   int64_t max_draft);
int64_t activation_bytes(const std::vector<ActivationTerm>& terms);
// The terms allocated at creation only.
int64_t activation_bytes_at_start(const std::vector<ActivationTerm>& terms);

}  // namespace tally::plan
