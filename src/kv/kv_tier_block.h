// One KV block outside the pool (host RAM or a file, kv/kv_offload.h): what identifies its
// contents, so that a hit is checked like a pool hit: equal key, equal parent key (or a first
// block with an equal salt) and equal token ids. The tiers cannot keep the pool's serial
// numbers (they die with their pool block), so a parent is recognised by its 128-bit chained
// key; a wrong hit would need an XXH3-128 collision of the parent chain AND equal tokens.
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
  std::string salt;            // first blocks only
  std::vector<int32_t> tokens;  // [block_size]

  static KvTierBlockId from(const PrefixBlockInfo& info) {
    return {info.key, info.parent_key, info.first, std::string(info.salt),
            std::vector<int32_t>(info.tokens.begin(), info.tokens.end())};
  }
  // The block a lookup asks for: the same key, first-block flag and token ids, and the same
  // parent key (a later block) or salt (a first block).
  bool matches(const PrefixBlockInfo& q) const {
    if (!(key == q.key) || first != q.first) return false;
    if (first ? salt != q.salt : !(parent_key == q.parent_key)) return false;
    return std::equal(tokens.begin(), tokens.end(), q.tokens.begin(), q.tokens.end());
  }
};

// What a lookup asks for: a block's identity as views.
using KvTierQuery = PrefixBlockInfo;

}  // namespace tally
