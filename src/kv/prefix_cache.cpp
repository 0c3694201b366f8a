#include "kv/prefix_cache.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "base/check.h"

namespace tally {

namespace {

// Tags in front of each part of a key's input, so that a salt can never read as tokens or a
// parent key (and a future adapter id gets a tag of its own).
enum PrefixKeyTag : uint8_t { kPrefixTagRoot = 1, kPrefixTagParent = 2, kPrefixTagSalt = 3,
                              kPrefixTagTokens = 4 };

void prefix_key_put(std::vector<uint8_t>& buf, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  buf.insert(buf.end(), p, p + n);
}

}  // namespace

PrefixCache::PrefixCache(int32_t n_blocks, int32_t block_size)
    : block_size_(block_size),
      key_(n_blocks),
      serial_(n_blocks, 0),
      parent_serial_(n_blocks, 0),
      parent_block_(n_blocks, kNoBlock),
      parent_key_(n_blocks),
      salt_(n_blocks),
      tokens_(static_cast<size_t>(n_blocks) * block_size, 0) {
  index_.reserve(static_cast<size_t>(n_blocks));
}

PrefixKey PrefixCache::key_of(const PrefixChain& parent, std::string_view salt,
                              std::span<const int32_t> tokens) const {
  TALLY_DCHECK(static_cast<int32_t>(tokens.size()) == block_size_, "key of a partial block");
  if (forced_key_) return *forced_key_;
  std::vector<uint8_t>& buf = key_input_;
  buf.clear();
  if (parent.serial == 0) {
    buf.push_back(kPrefixTagRoot);
    buf.push_back(kPrefixTagSalt);
    const uint64_t n = salt.size();
    prefix_key_put(buf, &n, sizeof n);
    prefix_key_put(buf, salt.data(), salt.size());
  } else {
    buf.push_back(kPrefixTagParent);
    prefix_key_put(buf, &parent.key.low, sizeof parent.key.low);
    prefix_key_put(buf, &parent.key.high, sizeof parent.key.high);
  }
  buf.push_back(kPrefixTagTokens);
  prefix_key_put(buf, tokens.data(), tokens.size_bytes());
  const XXH128_hash_t h = XXH3_128bits(buf.data(), buf.size());
  return {h.low64, h.high64};
}

std::span<const int32_t> PrefixCache::tokens_of(BlockId block) const {
  return std::span<const int32_t>(tokens_).subspan(static_cast<size_t>(block) * block_size_,
                                                   static_cast<size_t>(block_size_));
}

BlockId PrefixCache::find(const PrefixKey& key, const PrefixChain& parent, std::string_view salt,
                          std::span<const int32_t> tokens) const {
  auto [it, end] = index_.equal_range(key);
  for (; it != end; ++it) {
    const BlockId b = it->second;
    if (parent_serial_[b] != parent.serial) continue;
    if (parent.serial == 0 && salt_[b] != salt) continue;
    const std::span<const int32_t> stored = tokens_of(b);
    if (std::equal(stored.begin(), stored.end(), tokens.begin(), tokens.end())) return b;
  }
  return kNoBlock;
}

PrefixChain PrefixCache::insert(BlockId block, const PrefixKey& key, const PrefixChain& parent,
                                std::string_view salt, std::span<const int32_t> tokens) {
  TALLY_CHECK(!contains(block), "prefix cache: block {} indexed twice", block);
  TALLY_CHECK(static_cast<int32_t>(tokens.size()) == block_size_,
              "prefix cache: block of {} tokens (blocks hold {})", tokens.size(), block_size_);
  if (const BlockId same = find(key, parent, salt, tokens); same != kNoBlock) {
    return chain_of(same);
  }
  key_[block] = key;
  serial_[block] = next_serial_++;
  parent_serial_[block] = parent.serial;
  parent_block_[block] = parent.block;
  parent_key_[block] = parent.serial == 0 ? PrefixKey{} : parent.key;
  if (parent.serial == 0) salt_[block].assign(salt);
  std::copy(tokens.begin(), tokens.end(),
            tokens_.begin() + static_cast<ptrdiff_t>(block) * block_size_);
  index_.emplace(key, block);
  return chain_of(block);
}

PrefixChain PrefixCache::chain_of(BlockId block) const {
  TALLY_DCHECK(contains(block), "prefix cache: block {} is not indexed", block);
  return {key_[block], serial_[block], block};
}

PrefixBlockInfo PrefixCache::info_of(BlockId block) const {
  TALLY_DCHECK(contains(block), "prefix cache: block {} is not indexed", block);
  // Back to the first block through parents that are still the ones recorded (same serial).
  chain_scratch_.clear();
  BlockId b = block;
  bool whole = true;
  for (;;) {
    chain_scratch_.push_back(b);
    if (parent_serial_[b] == 0) break;
    const BlockId p = parent_block_[b];
    if (p == kNoBlock || serial_[p] != parent_serial_[b]) {
      whole = false;
      break;
    }
    b = p;
  }
  prefix_scratch_.clear();
  std::string_view salt;
  if (whole) {
    salt = salt_[chain_scratch_.back()];
    for (auto it = chain_scratch_.rbegin(); it != chain_scratch_.rend(); ++it) {
      const std::span<const int32_t> t = tokens_of(*it);
      prefix_scratch_.insert(prefix_scratch_.end(), t.begin(), t.end());
    }
  }
  return {key_[block], parent_key_[block], parent_serial_[block] == 0, salt, tokens_of(block),
          prefix_scratch_};
}

void PrefixCache::erase(BlockId block) {
  if (!contains(block)) return;
  auto [it, end] = index_.equal_range(key_[block]);
  for (; it != end; ++it) {
    if (it->second == block) {
      index_.erase(it);
      break;
    }
  }
  serial_[block] = 0;
  parent_serial_[block] = 0;
  parent_block_[block] = kNoBlock;
  salt_[block].clear();
}

Status PrefixCache::check_invariants() const {
  int64_t indexed = 0;
  for (uint64_t s : serial_) indexed += s != 0 ? 1 : 0;
  if (indexed != static_cast<int64_t>(index_.size())) {
    return make_error(ErrorCode::kInternal, "prefix cache: {} blocks indexed, index holds {}",
                      indexed, index_.size());
  }
  for (const auto& [key, block] : index_) {
    if (block < 0 || block >= static_cast<BlockId>(serial_.size()) || !contains(block)) {
      return make_error(ErrorCode::kInternal, "prefix cache: index holds stale block {}", block);
    }
    if (!(key_[block] == key)) {
      return make_error(ErrorCode::kInternal, "prefix cache: block {} indexed under a foreign key",
                        block);
    }
  }
  return Status::ok_status();
}

}  // namespace tally
