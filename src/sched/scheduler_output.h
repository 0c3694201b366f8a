// One step's plan, as plain data: both schedulers (continuous and static) produce it and the
// runner consumes it without knowing which made it.
//
// The output is complete for its step: every scheduled row carries the token ids it computes
// and its whole block table, so the runner keeps no per-sequence state between steps and
// there is nothing for the scheduler and the runner to keep in step. Progress has one
// counter, the scheduler's num_computed per sequence (row.start). The runner applies a step
// in this order:
//   1. block_copies, in list order, on the KV storage, before the forward pass;
//   2. computes every scheduled row: positions [start, start + n_tokens) of that sequence,
//      the known ones from tokens(row); a row with n_draft > 0 is a speculative verification:
//      its last n_draft positions hold draft tokens (draft(row)) that the sequence does not
//      know yet, and each of its last n_draft + 1 positions produces logits;
//   3. exposes the logits of each SampleSlot's row; the caller samples one token per slot and
//      passes the tokens, in slot order, to Scheduler::update(), which appends them.
// freed_seq_ids, finished_request_ids and preempted_request_ids say what ended since the
// previous step, for callers that keep per-sequence resources of their own (none must).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "sched/request.h"

namespace tally {

struct ScheduledSeq {
  RequestId request_id = 0;
  SeqId seq_id = kNoSeq;
  int32_t start = 0;     // tokens already computed = first position computed now
  int32_t n_tokens = 0;  // positions [start, start + n_tokens) computed this step
  // The known tokens of positions [start, start + n_tokens - n_draft), stored in
  // token_ids[tokens_begin, ...), and the sequence's whole block table (logical -> physical,
  // after this step's allocation) in block_ids[table_begin, table_begin + table_count).
  int32_t tokens_begin = 0;
  int32_t table_begin = 0;
  int32_t table_count = 0;
  // Speculation: the last n_draft of the n_tokens positions are draft tokens, stored in
  // draft_tokens[draft_begin, draft_begin + n_draft). The row's sample slot reads the logits
  // of all n_draft + 1 last positions (verification, then one bonus token).
  int32_t n_draft = 0;
  int32_t draft_begin = 0;
  // The draft model proposes the drafts (the engine fills draft_tokens in before the
  // forward); else they are the n-gram drafter's (or a replay's), known at scheduling.
  bool draft_by_model = false;

  int32_t n_known() const { return n_tokens - n_draft; }
};

// One token to sample from the logits of scheduled[row]. Several slots may share a row: the n
// samples of a prompt all draw their first token from the prompt's last position.
struct SampleSlot {
  int32_t row = 0;
  RequestId request_id = 0;
  SeqId seq_id = kNoSeq;  // the sequence that receives the token
  int32_t seq_index = 0;  // which sample of the request (its RNG stream)
};

struct SchedulerOutput {
  int64_t step = 0;
  std::vector<ScheduledSeq> scheduled;  // batch rows, in order
  std::vector<TokenId> token_ids;       // storage for the rows' known tokens
  std::vector<BlockId> block_ids;       // storage for the rows' block tables
  std::vector<TokenId> draft_tokens;    // storage for the rows' drafts
  std::vector<BlockCopy> block_copies;
  std::vector<SampleSlot> samples;
  std::vector<SeqId> freed_seq_ids;             // since the previous step
  std::vector<RequestId> finished_request_ids;  // since the previous step, blocks freed
  std::vector<RequestId> preempted_request_ids; // this step (their seq ids are in freed)
  int32_t n_tokens = 0;  // sum of scheduled n_tokens (<= the token budget)

  bool empty() const { return scheduled.empty(); }
  std::span<const TokenId> tokens(const ScheduledSeq& row) const {
    return std::span<const TokenId>(token_ids).subspan(row.tokens_begin, row.n_known());
  }
  std::span<const BlockId> block_table(const ScheduledSeq& row) const {
    return std::span<const BlockId>(block_ids).subspan(row.table_begin, row.table_count);
  }
  std::span<const TokenId> draft(const ScheduledSeq& row) const {
    return std::span<const TokenId>(draft_tokens).subspan(row.draft_begin, row.n_draft);
  }
  int32_t n_draft_tokens() const { return static_cast<int32_t>(draft_tokens.size()); }
  // Empties every list, keeping capacity (an output reused across steps does not allocate).
  void clear();
};

}  // namespace tally
