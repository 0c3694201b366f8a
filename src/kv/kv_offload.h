// The offload tiers below the KV pool: host RAM (--kv-offload-memory) and, below it, files on
// disk (--kv-offload-dir, --kv-offload-disk). When the pool reuses a cached block (eviction),
// KvCacheManager hands it here first: its K/V bytes, token ids and key are copied to the host
// tier (least recently used host blocks move down to the disk tier, or are dropped without
// one). A prefix lookup that misses the pool continues here; a hit is copied back into a pool
// block before the request's prefill resumes, and is indexed in the pool again.
//
// Reading back or recomputing: the engine reports how fast it computes tokens
// (note_recompute), and every load here is timed, per tier. A request's hits in the tiers are
// loaded only when their estimated load time is below the estimated time to compute their
// tokens (worth_loading); until both rates are measured, loading is assumed faster.
//
// Swap preemption (store_copy): a preempted sequence's cached blocks are copied to the host
// tier at once, while they are still in the pool, so that they survive its eviction.
//
// Thread rules: not thread-safe; the engine thread alone, between steps (KvBlockIo's rule).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/kv_block_io.h"
#include "kv/kv_disk_tier.h"
#include "kv/kv_tier_block.h"

namespace tally {

struct KvOffloadConfig {
  int64_t host_bytes = 0;      // host tier budget; 0 = none
  std::string disk_dir;        // disk tier directory; empty = none
  int64_t disk_bytes = 0;      // disk tier budget (with disk_dir)
  PrefixKey fingerprint;       // model file + KV types + shape (names the disk subdirectory)
  int32_t block_size = 0;      // tokens per block
};

// Counters (blocks and bytes), exported per tier in /metrics.
struct KvOffloadStats {
  int64_t host_hits = 0;        // blocks loaded back from the host tier
  int64_t disk_hits = 0;        // ... from the disk tier
  int64_t host_hit_bytes = 0;   // KV bytes loaded back from the host tier
  int64_t disk_hit_bytes = 0;
  int64_t host_stores = 0;      // blocks copied into the host tier
  int64_t disk_stores = 0;      // blocks written to the disk tier
  int64_t host_blocks = 0;      // blocks held now
  int64_t disk_blocks = 0;
  int64_t host_bytes = 0;       // bytes held now (K/V and token ids)
  int64_t disk_bytes = 0;
  int64_t disk_errors = 0;      // missing, truncated, corrupt or unwritable files (misses)
  int64_t skipped_loads = 0;    // tier hits recomputed because that was estimated faster
};

class KvOffload {
 public:
  // The disk tier opens (and indexes) its directory here: kIo when it cannot be made.
  static Result<std::unique_ptr<KvOffload>> create(const KvOffloadConfig& config, KvBlockIo& io);
  // Blocks of one block's tokens the host tier may hold for `host_bytes`; times
  // host_entry_bytes, what the ledger counts. The tier is bounded by that many bytes: a block
  // costs its K/V, its prefix's token ids and its salt, so deep blocks take a little more.
  static int64_t host_blocks_for(int64_t host_bytes, int64_t block_bytes, int32_t block_size);
  static int64_t host_entry_bytes(int64_t block_bytes, int32_t block_size) {
    return block_bytes + int64_t{block_size} * static_cast<int64_t>(sizeof(int32_t));
  }

  bool has_host() const { return max_host_bytes_ > 0; }
  bool has_disk() const { return disk_ != nullptr; }

  // Pool block `block` (indexed as `info`) is about to be reused: copy it down unless a tier
  // already holds it (then it only becomes most recently used).
  void store_evicted(const PrefixBlockInfo& info, BlockId block);
  // The same for a block that stays in the pool (swap preemption): into the host tier.
  void store_copy(const PrefixBlockInfo& info, BlockId block) { store_evicted(info, block); }

  // Which tier holds the block `q` asks for (kNone when none).
  KvTier find(const KvTierQuery& q) const;
  // Keeps a block in its tier while a request's tier hits are loaded (loading takes pool
  // blocks, whose eviction stores blocks here, which may push others out): a pinned host block
  // is never pushed out (an evicted pool block that finds only pinned ones goes to the disk
  // tier or is dropped), a disk block becomes most recently used. unpin_all() ends it.
  void pin(const PrefixKey& key);
  void unpin_all() { pinned_.clear(); }
  // Copies the block `q` asks for into pool block `block`; false when it is gone or damaged
  // (a miss: the caller computes it).
  bool load(const KvTierQuery& q, BlockId block);

  // Recompute rate: `tokens` computed by a forward pass that took `seconds`.
  void note_recompute(int64_t tokens, double seconds);
  // Whether loading n_host + n_disk blocks is estimated faster than computing their tokens.
  bool worth_loading(int32_t n_host, int32_t n_disk) const;
  // Counts hits a request recomputes instead (worth_loading said no).
  void note_skipped(int32_t n_blocks) { stats_.skipped_loads += n_blocks; }

  KvOffloadStats stats() const;
  int64_t block_bytes() const { return block_bytes_; }

 private:
  struct HostEntry {
    KvTierBlockId id;
    std::vector<std::byte> bytes;  // [block_bytes] K/V of every layer (KvBlockIo's order)
    int64_t cost() const {
      return static_cast<int64_t>(bytes.size() + id.prefix.size() * sizeof(int32_t) +
                                  id.salt.size());
    }
  };
  using HostLru = std::list<HostEntry>;  // front: most recently used

  KvOffload(const KvOffloadConfig& config, KvBlockIo& io);
  void host_insert(HostEntry entry);
  // Moves the least recently used unpinned host block down (to disk, or drops it) and
  // returns its entry; false when every host block is pinned.
  bool host_evict_one(HostEntry& evicted);
  // The host block `q` asks for (host_.end() when none): keys may collide, so every entry
  // under the key is checked.
  HostLru::iterator host_find(const KvTierQuery& q) const;
  // Takes `it` out of the index and the byte count (the caller erases it from host_).
  void host_unindex(HostLru::iterator it);
  bool pinned(const PrefixKey& key) const;
  void store_on_disk(const PrefixBlockInfo& info, BlockId block);

  KvOffloadConfig config_;
  KvBlockIo& io_;
  int64_t block_bytes_ = 0;
  int64_t max_host_bytes_ = 0;  // host_blocks_for x host_entry_bytes: the ledger's figure
  int64_t host_bytes_ = 0;      // the entries' cost() now
  mutable HostLru host_;
  std::unordered_multimap<PrefixKey, HostLru::iterator, PrefixKeyHasher> host_index_;
  std::unique_ptr<KvDiskTier> disk_;
  std::vector<PrefixKey> pinned_;  // a few: one request's tier hits
  std::vector<std::byte> scratch_;  // [block_bytes] a block on its way to or from the disk
  KvOffloadStats stats_;
  // Measured rates (exponential moving averages; 0 = not measured yet).
  double recompute_s_per_token_ = 0;
  double host_s_per_block_ = 0;
  double disk_s_per_block_ = 0;
};

// Folds a new measurement into a moving average (the first one is taken as it is).
double kv_offload_ema(double average, double sample);

}  // namespace tally
