// Per-sequence block tables over one BlockPool: which physical blocks hold a sequence's KV,
// in logical order, and how many tokens it has. The engine has one; the scheduler alone
// drives it. It never touches KV memory: where blocks must be copied (copy-on-write) it says
// so, and the runner performs the copy on the storage before the step's forward pass.
//
// Check, then commit: can_append()/blocks_needed() answer without changing anything, and a
// failed append() changes nothing. fork() shares every block (counts++); the first write into
// a shared block copies it first (BlockCopy). truncate() rolls back (speculative decoding).
//
// Prefix cache (config.enable_prefix_cache): full blocks are indexed by their contents
// (kv/prefix_cache.h) once the caller says their KV is computed (cache_full_blocks()). A new
// sequence can start with the longest indexed run of blocks at the start of its tokens
// (match_prefix(), then adopt_prefix()): held blocks get one more holder, free ones are revived.
// Freed indexed blocks go to the free list's tail, freed private ones to its head, so the pool
// reuses empty blocks first and then evicts cached ones least recently used first; a sequence
// frees its last block first, so a prompt's tail is evicted before its head.
//
// Offload tiers (set_offload, with the prefix cache): a cached block the pool reuses is first
// copied down (kv/kv_offload.h); match_prefix continues in the tiers where the pool misses,
// and adopt_prefix copies those blocks back into pool blocks (and indexes them again).
//
// Sliding window (config.sliding_window > 0: every layer of the model attends over the last
// `sliding_window` positions only): a block whose positions all lie before the window of the
// next token to compute is dropped, its table entry set to kNoBlock and the block released (an
// indexed one stays in the prefix index like any released block: its KV is complete, and a hit
// still needs the whole run from block 0). Dropping happens at the end of append(), for the
// window of the sequence's first appended token (the count before the append; done before the
// new blocks are taken, so the drop's blocks serve them), and at the end of truncate(), for the
// new count: a rollback (speculation) never cuts below the count before
// the last append, so no dropped block is needed again (truncate checks it). A sequence thus
// holds at most ceil((window + appended tokens) / block_size) + 1 blocks.
//
// Watermark: admitting a NEW sequence must leave watermark_blocks() free, so that sequences
// already running can still grow without being preempted at once (can_admit()).
//
// Thread rules: not thread-safe; one thread (the engine's) calls everything.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/check.h"
#include "base/status.h"
#include "kv/block_pool.h"
#include "kv/kv_offload.h"
#include "kv/prefix_cache.h"

namespace tally {

using SeqId = int64_t;

struct KvCacheConfig {
  int32_t n_blocks = 0;
  int32_t block_size = 16;  // tokens per block
  double watermark = 0.01;  // fraction of n_blocks kept free when admitting new sequences
  bool enable_prefix_cache = false;  // index full blocks for reuse (see above)
  int32_t sliding_window = 0;  // > 0: drop blocks behind every layer's window (see above)
};

// The longest cached run of full blocks at the start of some tokens: first in the pool, then
// in the offload tiers.
struct PrefixMatch {
  std::vector<BlockId> blocks;  // logical order: the pool's hits
  // The tier hits after them (logical blocks blocks.size() ...), by key: each is copied into
  // a free pool block on adoption.
  std::vector<PrefixKey> tier_keys;
  int32_t n_evictable = 0;  // free blocks adopting takes: pool hits nobody holds + tier hits
  int32_t n_tier_skipped = 0;  // tier hits left out: recomputing them was estimated faster
  // The key of the first full block past the match (has_next), the one a sequence starting
  // with these blocks computes first: two requests with the same next key share that block.
  PrefixKey next_key;
  bool has_next = false;
  int32_t n_blocks() const { return static_cast<int32_t>(blocks.size() + tier_keys.size()); }
  void clear() {
    blocks.clear();
    tier_keys.clear();
    n_evictable = 0;
    n_tier_skipped = 0;
    has_next = false;
  }
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
  int32_t sliding_window() const { return sliding_window_; }  // 0: no blocks are dropped
  // Blocks that n tokens occupy: ceil(n / block_size).
  int32_t blocks_for(int64_t n_tokens) const;

  bool contains(SeqId seq) const { return seqs_.count(seq) != 0; }
  int32_t num_tokens(SeqId seq) const;  // 0 for an unknown sequence
  // Leading logical blocks dropped behind the sliding window (their entries are kNoBlock).
  int32_t num_dropped_blocks(SeqId seq) const;
  // Logical -> physical (kNoBlock for dropped blocks). Valid until the next call that changes
  // this sequence.
  std::span<const BlockId> block_table(SeqId seq) const;
  const BlockPool& pool() const { return pool_; }

  // Blocks that append(seq, n) would take from the pool: new blocks past the table, plus one
  // if the block the first new token lands in is shared (copy-on-write), less the blocks it
  // frees first behind the window of that token (sliding window; at least 0). An unknown
  // sequence counts as empty.
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

  // Prefix cache. match_prefix: the longest indexed run of full blocks that `tokens` start
  // with (under `salt`), at most max_blocks of them; empty when caching is off.
  bool prefix_caching() const { return prefix_.has_value(); }
  void match_prefix(std::span<const int32_t> tokens, std::string_view salt, int32_t max_blocks,
                    PrefixMatch& match) const;
  // Creates `seq` holding the matched blocks as its first tokens, copying the tier hits back
  // into pool blocks (`tokens` and `salt` are the ones matched). The caller checked that
  // match.n_evictable blocks are free. Returns the tokens adopted: match.n_blocks() *
  // block_size, fewer when a tier block turned out gone or damaged (the rest is computed).
  int32_t adopt_prefix(SeqId seq, const PrefixMatch& match, std::span<const int32_t> tokens,
                       std::string_view salt);
  // A match with no tier hits needs no tokens (tests).
  int32_t adopt_prefix(SeqId seq, const PrefixMatch& match) {
    TALLY_CHECK(match.tier_keys.empty(), "kv: tier hits adopted without their tokens");
    return adopt_prefix(seq, match, {}, {});
  }
  // The offload tiers (not owned; they outlive this manager). Needs the prefix cache.
  void set_offload(KvOffload* offload);
  // Swap preemption: copies the sequence's cached blocks to the offload tiers now (they stay
  // in the pool until evicted). No-op without tiers.
  void offload_sequence(SeqId seq);
  // Indexes the full blocks among the first tokens.size() tokens of `seq`, whose KV is
  // computed (`tokens` are those tokens, `salt` the request's). No-op when caching is off.
  void cache_full_blocks(SeqId seq, std::span<const int32_t> tokens, std::string_view salt);
  // The key of the first block of `seq` not indexed yet, when `tokens` (the sequence's known
  // tokens) fill it: the block the sequence computes next. False when caching is off.
  bool next_uncached_key(SeqId seq, std::span<const int32_t> tokens, std::string_view salt,
                         PrefixKey& key) const;
  int32_t n_cached_blocks() const { return prefix_ ? prefix_->n_cached() : 0; }
  // Test hook: see PrefixCache::force_key_for_test.
  void force_prefix_key_for_test(std::optional<PrefixKey> key);

  // Utilization: tokens held by sequences (a shared block counts once per holder, so sharing
  // can push this past the slots) and slots in used blocks.
  int64_t n_seq_tokens() const { return n_seq_tokens_; }
  int64_t n_used_slots() const { return int64_t{n_used_blocks()} * block_size_; }

  // The pool's own invariants (and the prefix index's), plus: every block's count equals the number of tables that
  // hold it, no table holds a block twice, every table covers its tokens, and the token
  // counter adds up. A Status that names the first broken rule (tests).
  Status check_invariants() const;

 private:
  struct Seq {
    std::vector<BlockId> blocks;  // logical -> physical, >= blocks_for(n_tokens) entries
    int32_t n_tokens = 0;
    int32_t n_cached_blocks = 0;  // leading blocks known to the prefix index
    int32_t n_dropped = 0;        // leading blocks dropped behind the window (kNoBlock)
    PrefixChain chain;            // the index's chain through block n_cached_blocks - 1
  };
  const Seq* find(SeqId seq) const;
  Seq& get(SeqId seq);
  // Index of the block the next token of `s` lands in when it is shared, else -1.
  int32_t shared_write_block(const Seq& s) const;
  // The pool's next block, evicted from the prefix index first when it was cached there.
  BlockId take_block();
  void release_block(BlockId block);
  // n: blocks [0, n) of `s` lie wholly behind the window of the token at next_pos (0 without
  // a window). drop_behind_window releases them; blocks_freed_by_drop counts what that frees.
  int32_t blocks_behind_window(const Seq& s, int32_t next_pos) const;
  // Drops the blocks of `s` behind the window of a token at position `next_pos` (sliding window).
  void drop_behind_window(Seq& s, int32_t next_pos);
  // Blocks drop_behind_window(s, next_pos) would return to the pool (those `s` alone holds).
  int32_t blocks_freed_by_drop(const Seq& s, int32_t next_pos) const;

  // match_prefix's part below the pool: the tier hits from logical block `first` on.
  void match_tiers(std::span<const int32_t> tokens, std::string_view salt, int32_t first,
                   int32_t max_blocks, PrefixKey parent_key, PrefixMatch& match) const;
  // adopt_prefix's part below the pool: loads the tier hits into new pool blocks of `s`.
  void adopt_from_tiers(Seq& s, const PrefixMatch& match, std::span<const int32_t> tokens,
                        std::string_view salt);
  void load_tier_blocks(Seq& s, const PrefixMatch& match, std::span<const int32_t> tokens,
                        std::string_view salt);

  BlockPool pool_;
  std::optional<PrefixCache> prefix_;  // set when prefix caching is on
  KvOffload* offload_ = nullptr;       // set_offload()
  int32_t block_size_;
  int32_t sliding_window_;
  int32_t watermark_blocks_;
  std::unordered_map<SeqId, Seq> seqs_;
  int64_t n_seq_tokens_ = 0;
};

}  // namespace tally
