// One forward step's input: a ragged batch of tokens from several sequences. The tokens of a
// sequence are the next consecutive positions after what its KV cache already holds (a prefill
// chunk, one decode token, or a few speculative tokens); several sequences share one call.
// All spans are borrowed from the caller for the duration of forward().
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"

namespace tally {

struct BatchSequence {
  std::span<const int32_t> block_table;  // physical block ids, logical order
};

struct Batch {
  std::span<const int32_t> tokens;      // [n_tokens]
  std::span<const int32_t> positions;   // [n_tokens] position of each token in its sequence
  std::span<const int32_t> seq_index;   // [n_tokens] index into seqs
  std::span<const BatchSequence> seqs;
  std::span<const int32_t> logit_rows;  // token indices whose logits are wanted, e.g. each
                                        // sequence's last token
  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
};

// What a batch must fit (from the model, the KV cache and the scratch buffers).
struct BatchLimits {
  int64_t n_vocab = 0;
  int64_t max_position = 0;  // exclusive
  int64_t n_blocks = 0;
  int64_t block_size = 0;
  int64_t max_tokens = 0;    // also bounds seqs and logit_rows
  // Every layer's sliding window (0: none). Table entries wholly behind the window of every
  // token of their sequence may be -1 (dropped by the KV manager; never read); -1 entries
  // must lead the table.
  int64_t window = 0;
};

// InvalidArgument naming the first offending field and index; ok when every token id,
// position, sequence index, block table entry and logit row is in range.
Status validate_batch(const Batch& batch, const BatchLimits& limits);

}  // namespace tally
