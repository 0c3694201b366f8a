// The prefix cache's index: which physical blocks hold which full blocks of tokens, so that a
// request whose prompt starts like an earlier one reuses that KV instead of computing it.
//
// Key of a full block = XXH3-128(parent's key, the block's token ids), the first block's key
// also taking the request's cache salt (tagged, so extra keys cannot collide with tokens or
// with one another). The key only finds candidates: a block matches only when its stored token
// ids, its parent (by serial number, see below) and, for a first block, its salt are equal to
// the request's. A hash collision therefore costs a miss, never wrong KV.
//
// Parents by serial: every insert() gets a new serial number, never reused; a child records its
// parent's. When the parent is evicted (and its block reused for other tokens) the serial dies
// with it, so the orphaned child can never again be matched under the wrong prefix.
//
// The index borrows, the pool owns: it never holds a reference. A cached block nobody holds sits
// in the pool's free list (evictable); KvCacheManager erases it here when the pool hands it out
// again. Only full blocks are indexed; the partial tail block of a sequence stays private.
//
// Thread rules: not thread-safe; the engine thread alone (through KvCacheManager).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/block_pool.h"

namespace tally {

struct PrefixKey {
  uint64_t low = 0;
  uint64_t high = 0;
  bool operator==(const PrefixKey&) const = default;
};

struct PrefixKeyHasher {
  size_t operator()(const PrefixKey& key) const { return static_cast<size_t>(key.low); }
};

// Where a chain of cached blocks stands: the last block's key, serial number and pool block
// (zero, zero and kNoBlock before the first block).
struct PrefixChain {
  PrefixKey key;
  uint64_t serial = 0;
  BlockId block = kNoBlock;
};

// A serial no pool block ever gets: the chain of a block found in an offload tier (its key
// is known, its serial died with its pool block), so no pool block matches as its child.
inline constexpr uint64_t kOffloadedSerial = ~uint64_t{0};

// What identifies an indexed block's contents outside the pool (kv/kv_offload.h): its key,
// its parent's key (zero for a first block), its chain's salt, its token ids, and every token
// id from the sequence's start through this block (`prefix`, whose last block_size ids are
// `tokens`): the offload tiers have no serial numbers, so they compare the whole prefix.
struct PrefixBlockInfo {
  PrefixKey key;
  PrefixKey parent_key;
  bool first = false;
  std::string_view salt;
  std::span<const int32_t> tokens;
  std::span<const int32_t> prefix;  // empty: unknown (a parent was evicted first)
};

class PrefixCache {
 public:
  PrefixCache(int32_t n_blocks, int32_t block_size);
  // What the per-block arrays below take for n_blocks (the ledger's "other"; the index's
  // hash nodes come and go with cached blocks and are not counted).
  static int64_t bytes_for(int32_t n_blocks, int32_t block_size) {
    return int64_t{n_blocks} *
           static_cast<int64_t>(2 * sizeof(PrefixKey) + 2 * sizeof(uint64_t) + sizeof(BlockId) +
                                sizeof(std::string) +
                                static_cast<size_t>(block_size) * sizeof(int32_t));
  }

  // The key of the full block `tokens` (block_size ids) after `parent`; the salt enters only
  // the first block's key (parent.serial == 0).
  PrefixKey key_of(const PrefixChain& parent, std::string_view salt,
                   std::span<const int32_t> tokens) const;
  // The cached block that follows `parent` and holds exactly `tokens` (with `salt` when it is
  // a first block), or kNoBlock.
  BlockId find(const PrefixKey& key, const PrefixChain& parent, std::string_view salt,
               std::span<const int32_t> tokens) const;
  // Indexes `block` as holding `tokens` after `parent`; returns the chain through it. When an
  // equal block is indexed already, `block` stays private and the chain goes through that one.
  PrefixChain insert(BlockId block, const PrefixKey& key, const PrefixChain& parent,
                     std::string_view salt, std::span<const int32_t> tokens);
  // The chain through an indexed block.
  PrefixChain chain_of(BlockId block) const;
  // An indexed block's identity, valid until the index changes or the next info_of(). Its
  // prefix is gathered through the parents still indexed; when one was evicted first (the
  // pool evicts a prompt's tail first, so rarely) the prefix is empty.
  PrefixBlockInfo info_of(BlockId block) const;
  // `block` is about to receive other contents: forget it (no-op when not indexed).
  void erase(BlockId block);
  bool contains(BlockId block) const { return serial_[block] != 0; }
  int32_t n_cached() const { return static_cast<int32_t>(index_.size()); }

  // Test hook: every key becomes this constant, so every lookup collides (the token, parent
  // and salt checks must still keep answers right). nullopt restores XXH3.
  void force_key_for_test(std::optional<PrefixKey> key) { forced_key_ = key; }

  // Every index entry points at a block indexed under that key, and every indexed block is in
  // the index once. A Status naming the first broken rule (tests).
  Status check_invariants() const;

 private:
  std::span<const int32_t> tokens_of(BlockId block) const;

  int32_t block_size_;
  std::unordered_multimap<PrefixKey, BlockId, PrefixKeyHasher> index_;
  std::vector<PrefixKey> key_;           // [n_blocks]
  std::vector<uint64_t> serial_;         // [n_blocks] 0 = not indexed
  std::vector<uint64_t> parent_serial_;  // [n_blocks] 0 = a first block
  std::vector<BlockId> parent_block_;    // [n_blocks] the parent's pool block (check its serial)
  std::vector<PrefixKey> parent_key_;    // [n_blocks] the parent's key (offload tiers)
  std::vector<std::string> salt_;        // [n_blocks] first blocks only
  std::vector<int32_t> tokens_;          // [n_blocks][block_size]
  uint64_t next_serial_ = 1;
  std::optional<PrefixKey> forced_key_;
  mutable std::vector<uint8_t> key_input_;  // scratch of key_of(): kept to avoid allocating
  mutable std::vector<BlockId> chain_scratch_;  // info_of(): the blocks of a prefix
  mutable std::vector<int32_t> prefix_scratch_;  // info_of(): its tokens
};

}  // namespace tally
