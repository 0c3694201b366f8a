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
  // The block that follows a chain ending in `parent_key` (ignored for a first block) and
  // holds exactly `tokens` under `salt`.
  bool matches(const PrefixKey& want_key, const PrefixKey& want_parent, bool want_first,
               std::string_view want_salt, std::span<const int32_t> want_tokens) const {
    if (!(key == want_key) || first != want_first) return false;
    if (first ? salt != want_salt : !(parent_key == want_parent)) return false;
    return std::equal(tokens.begin(), tokens.end(), want_tokens.begin(), want_tokens.end());
  }
};

// What a lookup asks for: a block's identity as views.
struct KvTierQuery {
  PrefixKey key;
  PrefixKey parent_key;
  bool first = false;
  std::string_view salt;
  std::span<const int32_t> tokens;
  bool matched_by(const KvTierBlockId& id) const {
    return id.matches(key, parent_key, first, salt, tokens);
  }
};

}  // namespace tally
