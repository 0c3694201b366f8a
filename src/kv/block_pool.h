// The KV pool's bookkeeping: n fixed blocks, a reference count each, and a free list kept in
// eviction order. It owns no memory: the KV storage lives with the model (addressed by the
// physical block ids handed out here), so this class is testable with toy sizes.
//
// Free list = LRU: a block whose count drops to zero goes to the tail; alloc() takes the head.
// A freed block keeps its contents until it is reallocated, which is what a prefix cache will
// exploit: it tags full blocks with a content hash (hash slot below) and revives a free block
// whose hash matches before it reaches the head. The list is doubly linked so that revival can
// unlink a block from the middle in O(1). Not implemented yet: only the hash slot exists.
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
inline constexpr uint64_t kNoBlockHash = 0;

class BlockPool {
 public:
  explicit BlockPool(int32_t n_blocks);

  int32_t n_blocks() const { return static_cast<int32_t>(ref_.size()); }
  int32_t n_free() const { return n_free_; }
  int32_t n_used() const { return n_blocks() - n_free_; }

  // The least recently freed block, with a count of 1 and no hash; nullopt when none is free.
  std::optional<BlockId> alloc();
  // Another holder of a block in use (fork shares blocks).
  void ref(BlockId block);
  // One holder lets go; at zero the block joins the tail of the free list.
  void unref(BlockId block);
  int32_t ref_count(BlockId block) const;

  // Prefix-cache hook: a content hash per block, kNoBlockHash when unknown. Cleared by alloc().
  uint64_t hash(BlockId block) const;
  void set_hash(BlockId block, uint64_t hash);

  // The free list head to tail (the order alloc() will hand blocks out). Allocates: tests and
  // debugging only.
  std::vector<BlockId> free_list_in_order() const;

  // Free list well formed (linked both ways, no block twice, length = n_free), and a block is
  // on it exactly when its count is zero. A Status that names the first broken rule.
  Status check_invariants() const;

 private:
  void check_block(BlockId block) const;
  void push_tail(BlockId block);
  void unlink(BlockId block);

  std::vector<int32_t> ref_;    // [n_blocks] holders per block
  std::vector<uint64_t> hash_;  // [n_blocks] content hash, kNoBlockHash = none
  std::vector<BlockId> prev_;   // [n_blocks] free-list links, kNoBlock at the ends and for
  std::vector<BlockId> next_;   // [n_blocks]   blocks in use
  BlockId head_ = kNoBlock;
  BlockId tail_ = kNoBlock;
  int32_t n_free_ = 0;
};

}  // namespace tally
