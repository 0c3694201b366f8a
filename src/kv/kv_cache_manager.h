// Per-sequence block tables over one BlockPool: which physical blocks hold a sequence's KV,
// in logical order, and how many tokens it has. The engine has one; the scheduler alone
// drives it. It never touches KV memory: where blocks must be copied (copy-on-write) it says
// so, and the runner performs the copy on the storage before the step's forward pass.
//
// Check, then commit: can_append()/blocks_needed() answer without changing anything, and a
// failed append() changes nothing. fork() shares every block (counts++); the first write into
// a shared block copies it first (BlockCopy). truncate() rolls back (speculative decoding).
//
// Watermark: admitting a NEW sequence must leave watermark_blocks() free, so that sequences
// already running can still grow without being preempted at once (can_admit()).
//
// Thread rules: not thread-safe; one thread (the engine's) calls everything.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/block_pool.h"

namespace tally {

using SeqId = int64_t;

struct KvCacheConfig {
  int32_t n_blocks = 0;
  int32_t block_size = 16;  // tokens per block
  double watermark = 0.01;  // fraction of n_blocks kept free when admitting new sequences
};

// A copy the runner must make on the KV storage (every layer, K and V) before this step's
// forward pass, in list order: block `src` into block `dst`, now logical block
// `logical_block` of `seq`.
struct BlockCopy {
  SeqId seq = 0;
  int32_t logical_block = 0;
  BlockId src = kNoBlock;
  BlockId dst = kNoBlock;
};

class KvCacheManager {
 public:
  static Status validate(const KvCacheConfig& config);
  explicit KvCacheManager(const KvCacheConfig& config);  // config must validate()

  int32_t block_size() const { return block_size_; }
  int32_t n_blocks() const { return pool_.n_blocks(); }
  int32_t n_free_blocks() const { return pool_.n_free(); }
  int32_t n_used_blocks() const { return pool_.n_used(); }
  double usage() const;  // used / total, 0 for an empty pool
  int32_t watermark_blocks() const { return watermark_blocks_; }
  // Blocks that n tokens occupy: ceil(n / block_size).
  int32_t blocks_for(int64_t n_tokens) const;

  bool contains(SeqId seq) const { return seqs_.count(seq) != 0; }
  int32_t num_tokens(SeqId seq) const;  // 0 for an unknown sequence
  // Logical -> physical. Valid until the next call that changes this sequence.
  std::span<const BlockId> block_table(SeqId seq) const;
  const BlockPool& pool() const { return pool_; }

  // Blocks that append(seq, n) would take from the pool: new blocks past the table, plus one
  // if the block the first new token lands in is shared (copy-on-write). An unknown sequence
  // counts as empty.
  int32_t blocks_needed(SeqId seq, int32_t n_tokens) const;
  bool can_append(SeqId seq, int32_t n_tokens) const;
  // can_append that also leaves watermark_blocks() free (admission of a new sequence).
  bool can_admit(SeqId seq, int32_t n_tokens) const;
  // Room for n more tokens (creating the sequence if unknown); a copy-on-write is added to
  // `copies`. kOutOfMemory, and nothing changed, when the pool is short.
  Status append(SeqId seq, int32_t n_tokens, std::vector<BlockCopy>& copies);
  // Blocks for `capacity_tokens` tokens in all, filled later by append() without allocating
  // (the static-batching baseline reserves a whole context up front). Creates the sequence.
  bool can_reserve(SeqId seq, int32_t capacity_tokens) const;
  Status reserve(SeqId seq, int32_t capacity_tokens);

  // `child` (new) shares every block of `parent` holding tokens; no block is copied now.
  void fork(SeqId parent, SeqId child);
  // Keeps the first n_tokens (<= num_tokens) and frees the blocks past them.
  void truncate(SeqId seq, int32_t n_tokens);
  // Lets go of every block of the sequence and forgets it.
  void free(SeqId seq);

  // Utilization: tokens held by sequences (a shared block counts once per holder, so sharing
  // can push this past the slots) and slots in used blocks.
  int64_t n_seq_tokens() const { return n_seq_tokens_; }
  int64_t n_used_slots() const { return int64_t{n_used_blocks()} * block_size_; }

  // The pool's own invariants, plus: every block's count equals the number of tables that
  // hold it, no table holds a block twice, every table covers its tokens, and the token
  // counter adds up. A Status that names the first broken rule (tests).
  Status check_invariants() const;

 private:
  struct Seq {
    std::vector<BlockId> blocks;  // logical -> physical, >= blocks_for(n_tokens) entries
    int32_t n_tokens = 0;
  };
  const Seq* find(SeqId seq) const;
  Seq& get(SeqId seq);
  // Index of the block the next token of `s` lands in when it is shared, else -1.
  int32_t shared_write_block(const Seq& s) const;

  BlockPool pool_;
  int32_t block_size_;
  int32_t watermark_blocks_;
  std::unordered_map<SeqId, Seq> seqs_;
  int64_t n_seq_tokens_ = 0;
};

}  // namespace tally
