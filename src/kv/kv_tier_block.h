// One KV block outside the pool (host RAM or a file, kv/kv_offload.h): what identifies its
// contents. The tiers cannot keep the pool's serial numbers (they die with their pool block),
// so a block keeps every token id from the sequence's start through its own, and its salt: a
// hit needs them all equal to the request's, so even keys that collide (the tests force them
// to one constant) never serve wrong KV. The keys only find candidates.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv/prefix_cache.h"

namespace tally {

// Where a lookup below the pool found a block.
enum class KvTier : uint8_t { kNone, kHost, kDisk };

struct KvTierBlockId {
  PrefixKey key;
  PrefixKey parent_key;  // zero for a first block
  bool first = false;
  std::string salt;             // the chain's (every block keeps it)
  std::vector<int32_t> prefix;  // token ids from the sequence's start through this block

  // Empty when `info` does not know its whole prefix: such a block is not stored.
  static KvTierBlockId from(const PrefixBlockInfo& info) {
    return {info.key, info.parent_key, info.first, std::string(info.salt),
            std::vector<int32_t>(info.prefix.begin(), info.prefix.end())};
  }
  std::span<const int32_t> tokens(int32_t block_size) const {
    return std::span<const int32_t>(prefix).last(static_cast<size_t>(block_size));
  }
  // The block a lookup asks for: the same key, first-block flag, parent key, salt and every
  // token id of the prefix. Equal prefixes and salts alone make the KV equal; the keys only
  // find candidates (a collision of the whole chain still costs a miss, never wrong KV).
  bool matches(const PrefixBlockInfo& q) const {
    if (!(key == q.key) || first != q.first || salt != q.salt) return false;
    if (!first && !(parent_key == q.parent_key)) return false;
    return std::equal(prefix.begin(), prefix.end(), q.prefix.begin(), q.prefix.end());
  }
};

// What a lookup asks for: a block's identity as views.
using KvTierQuery = PrefixBlockInfo;

}  // namespace tally
