#include "model/batch.h"

#include <algorithm>

namespace tally {

namespace {

Status validate_sequences(const Batch& b, const BatchLimits& lim) {
  for (size_t s = 0; s < b.seqs.size(); ++s) {
    const auto& table = b.seqs[s].block_table;
    bool held = false;  // past the leading dropped (-1) entries
    for (size_t i = 0; i < table.size(); ++i) {
      if (table[i] == -1 && !held) continue;
      held = true;
      if (table[i] < 0 || table[i] >= lim.n_blocks)
        return make_error(ErrorCode::kInvalidArgument, "batch: seqs[{}].block_table[{}] = {} is not a block (0..{})",
                          s, i, table[i], lim.n_blocks - 1);
    }
  }
  return Status::ok_status();
}

}  // namespace

Status validate_batch(const Batch& b, const BatchLimits& lim) {
  const size_t n = b.tokens.size();
  if (b.positions.size() != n || b.seq_index.size() != n)
    return make_error(ErrorCode::kInvalidArgument, "batch: {} tokens but {} positions and {} sequence indices", n,
                      b.positions.size(), b.seq_index.size());
  if (static_cast<int64_t>(n) > lim.max_tokens)
    return make_error(ErrorCode::kInvalidArgument, "batch: {} tokens exceed the step's maximum of {}", n,
                      lim.max_tokens);
  if (static_cast<int64_t>(b.seqs.size()) > lim.max_tokens)
    return make_error(ErrorCode::kInvalidArgument, "batch: {} sequences exceed the step's maximum of {}",
                      b.seqs.size(), lim.max_tokens);
  TALLY_RETURN_IF_ERROR(validate_sequences(b, lim));
  for (size_t t = 0; t < n; ++t) {
    if (b.tokens[t] < 0 || b.tokens[t] >= lim.n_vocab)
      return make_error(ErrorCode::kInvalidArgument, "batch: tokens[{}] = {} is outside the vocabulary (0..{})", t,
                        b.tokens[t], lim.n_vocab - 1);
    if (b.positions[t] < 0 || b.positions[t] >= lim.max_position)
      return make_error(ErrorCode::kInvalidArgument, "batch: positions[{}] = {} is outside the context (0..{})", t,
                        b.positions[t], lim.max_position - 1);
    if (b.seq_index[t] < 0 || static_cast<size_t>(b.seq_index[t]) >= b.seqs.size())
      return make_error(ErrorCode::kInvalidArgument, "batch: seq_index[{}] = {} but the batch has {} sequences", t,
                        b.seq_index[t], b.seqs.size());
    const int64_t needed = b.positions[t] / lim.block_size + 1;
    const auto& table = b.seqs[b.seq_index[t]].block_table;
    if (static_cast<int64_t>(table.size()) < needed)
      return make_error(ErrorCode::kInvalidArgument,
                        "batch: tokens[{}] at position {} needs {} blocks but seqs[{}].block_table has {}", t,
                        b.positions[t], needed, b.seq_index[t], table.size());
    // The first block the token reads (its window's); dropped entries lead, so those after it hold.
    const int64_t first_read = lim.window > 0 ? std::max<int64_t>(0, b.positions[t] - lim.window + 1) : 0;
    if (table[first_read / lim.block_size] < 0)
      return make_error(ErrorCode::kInvalidArgument,
                        "batch: tokens[{}] at position {} reads seqs[{}].block_table[{}], which is dropped", t,
                        b.positions[t], b.seq_index[t], first_read / lim.block_size);
  }
  if (b.logit_rows.size() > static_cast<size_t>(lim.max_tokens))
    return make_error(ErrorCode::kInvalidArgument, "batch: {} logit rows exceed the step's maximum of {}",
                      b.logit_rows.size(), lim.max_tokens);
  for (size_t i = 0; i < b.logit_rows.size(); ++i)
    if (b.logit_rows[i] < 0 || static_cast<size_t>(b.logit_rows[i]) >= n)
      return make_error(ErrorCode::kInvalidArgument, "batch: logit_rows[{}] = {} but the batch has {} tokens", i,
                        b.logit_rows[i], n);
  return Status::ok_status();
}

}  // namespace tally
