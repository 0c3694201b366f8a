// The KV pool's bookkeeping: n fixed blocks, a reference count each, and a free list kept in
// eviction order. It owns no memory: the KV storage lives with the model (addressed by the
// physical block ids handed out here), so this class is testable with toy sizes.
//
// Free list = LRU: a block whose count drops to zero goes to the tail (or, when its contents
// are worth nothing, to the head); alloc() takes the head. A freed block keeps its contents
// until it is reallocated, which the prefix cache (kv/prefix_cache.h) exploits: a free block
// it still indexes can be revived from the middle of the list in O(1) (doubly linked), and
// alloc() taking the head is the cache's eviction. So "free" and "evictable" are one set.
//
// Thread rules: not thread-safe; the engine thread alone owns it (through KvCacheManager).
// Every operation is O(1) and allocation-free.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"

namespace tally {

using BlockId = int32_t;
inline constexpr BlockId kNoBlock = -1;

// Where a block whose count drops to zero joins the free list: the tail (allocated last: its
// contents may be reused) or the head (allocated first: nothing in it is worth keeping).
enum class FreeEnd : uint8_t { kTail, kHead };

class BlockPool {
 public:
  explicit BlockPool(int32_t n_blocks);
  // What the per-block arrays below take for n_blocks (the ledger's "other").
  static int64_t bytes_for(int32_t n_blocks) {
    return int64_t{n_blocks} * static_cast<int64_t>(sizeof(int32_t) + 2 * sizeof(BlockId));
  }

  int32_t n_blocks() const { return static_cast<int32_t>(ref_.size()); }
  int32_t n_free() const { return n_free_; }
  int32_t n_used() const { return n_blocks() - n_free_; }

  // The free list's head (least recently freed), with a count of 1; nullopt when none is free.
  std::optional<BlockId> alloc();
  // The block alloc() would hand out next, kNoBlock when none is free.
  BlockId next_alloc() const { return head_; }
  // Takes a free block out of the middle of the free list with a count of 1 (a prefix-cache
  // hit on a block nobody holds).
  void revive(BlockId block);
  // Another holder of a block in use (fork shares blocks).
  void ref(BlockId block);
  // One holder lets go; at zero the block joins the free list at `end`.
  void unref(BlockId block, FreeEnd end = FreeEnd::kTail);
  int32_t ref_count(BlockId block) const;

  // The free list head to tail (the order alloc() will hand blocks out). Allocates: tests and
  // debugging only.
  std::vector<BlockId> free_list_in_order() const;

  // Free list well formed (linked both ways, no block twice, length = n_free), and a block is
  // on it exactly when its count is zero. A Status that names the first broken rule.
  Status check_invariants() const;

 private:
  void check_block(BlockId block) const;
  void push_tail(BlockId block);
  void push_head(BlockId block);
  void unlink(BlockId block);

  std::vector<int32_t> ref_;    // [n_blocks] holders per block
  std::vector<BlockId> prev_;   // [n_blocks] free-list links, kNoBlock at the ends and for
  std::vector<BlockId> next_;   // [n_blocks]   blocks in use
  BlockId head_ = kNoBlock;
  BlockId tail_ = kNoBlock;
  int32_t n_free_ = 0;
};

}  // namespace tally
