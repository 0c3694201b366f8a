// One step's plan, as plain data: both schedulers (continuous and static) produce it and the
// runner consumes it without knowing which made it.
//
// The runner keeps per-sequence state (tokens, block table) between steps. It applies a step
// in this order:
//   1. freed_seq_ids: drop those sequences' state (finished, aborted, preempted, carriers;
//      an id it never saw, e.g. a forked sample aborted before its first row, is ignored);
//   2. new_seqs: sequences it has not seen (first admission, a forked sample, a preempted one
//      coming back) arrive in full: every known token and the block table;
//   3. each scheduled row of a sequence it knows carries a block-table delta: keep the first
//      table_keep entries, then append new_blocks(row);
//   4. block_copies, in list order, on the KV storage, before the forward pass;
//   5. computes every scheduled row: positions [start, start + n_tokens) of that sequence; a
//      row with n_draft > 0 is a speculative verification: its last n_draft positions hold
//      draft tokens (draft(row)) that the sequence does not know yet, and each of its last
//      n_draft + 1 positions produces logits;
//   6. samples one token per SampleSlot from the logits of the slot's row, appends it to the
//      slot's sequence if it knows that sequence (a sample for a not-yet-forked sequence
//      reaches the runner inside its NewSeq next step), and passes the tokens, in slot order,
//      to Scheduler::update().
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "sched/request.h"

namespace tally {

struct NewSeq {
  RequestId request_id = 0;
  SeqId seq_id = kNoSeq;
  int32_t seq_index = 0;              // which sample; -1 for a prompt carrier
  std::vector<TokenId> tokens;        // every known token: prompt, then outputs so far
  std::vector<BlockId> block_table;   // logical -> physical, after this step's allocation
};

struct ScheduledSeq {
  RequestId request_id = 0;
  SeqId seq_id = kNoSeq;
  int32_t start = 0;     // tokens already computed = first position computed now
  int32_t n_tokens = 0;  // positions [start, start + n_tokens) computed this step
  int32_t new_seq = -1;  // index into new_seqs when sent in full this step, else -1
  // Block-table delta (new_seq == -1): keep this many leading entries, then append
  // new_block_ids[new_blocks_begin, new_blocks_begin + new_blocks_count).
  int32_t table_keep = 0;
  int32_t new_blocks_begin = 0;
  int32_t new_blocks_count = 0;
  // Speculation: the last n_draft of the n_tokens positions are draft tokens, stored in
  // draft_tokens[draft_begin, draft_begin + n_draft). The row's sample slot reads the logits
  // of all n_draft + 1 last positions (verification, then one bonus token).
  int32_t n_draft = 0;
  int32_t draft_begin = 0;
  // The draft model proposes the drafts (the engine fills draft_tokens in before the
  // forward); else they are the n-gram drafter's (or a replay's), known at scheduling.
  bool draft_by_model = false;
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
  std::vector<NewSeq> new_seqs;
  std::vector<BlockId> new_block_ids;   // storage for the rows' table deltas
  std::vector<TokenId> draft_tokens;    // storage for the rows' drafts
  std::vector<BlockCopy> block_copies;
  std::vector<SampleSlot> samples;
  std::vector<SeqId> freed_seq_ids;             // since the previous step
  std::vector<RequestId> finished_request_ids;  // since the previous step, blocks freed
  std::vector<RequestId> preempted_request_ids; // this step (their seq ids are in freed)
  int32_t n_tokens = 0;  // sum of scheduled n_tokens (<= the token budget)

  bool empty() const { return scheduled.empty(); }
  std::span<const BlockId> new_blocks(const ScheduledSeq& row) const {
    return std::span<const BlockId>(new_block_ids)
        .subspan(row.new_blocks_begin, row.new_blocks_count);
  }
  std::span<const TokenId> draft(const ScheduledSeq& row) const {
    return std::span<const TokenId>(draft_tokens).subspan(row.draft_begin, row.n_draft);
  }
  int32_t n_draft_tokens() const { return static_cast<int32_t>(draft_tokens.size()); }
  // Empties every list, keeping capacity (an output reused across steps does not allocate).
  void clear();
};

}  // namespace tally
