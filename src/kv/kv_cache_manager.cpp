#include "kv/kv_cache_manager.h"

#include <algorithm>

#include "base/check.h"

namespace tally {

Status KvCacheManager::validate(const KvCacheConfig& config) {
  if (config.n_blocks < 0) {
    return make_error(ErrorCode::kInvalidArgument, "kv: {} blocks (must be >= 0)",
                      config.n_blocks);
  }
  if (config.block_size <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "kv: block size {} (must be > 0)",
                      config.block_size);
  }
  if (config.sliding_window < 0) {
    return make_error(ErrorCode::kInvalidArgument, "kv: sliding window {} (must be >= 0)",
                      config.sliding_window);
  }
  if (!(config.watermark >= 0.0 && config.watermark < 1.0)) {
    return make_error(ErrorCode::kInvalidArgument, "kv: watermark {} (must be in [0, 1))",
                      config.watermark);
  }
  return Status::ok_status();
}

KvCacheManager::KvCacheManager(const KvCacheConfig& config)
    : pool_(config.n_blocks),
      block_size_(config.block_size),
      sliding_window_(config.sliding_window),
      watermark_blocks_(static_cast<int32_t>(config.watermark * config.n_blocks)) {
  const Status valid = validate(config);
  TALLY_CHECK(valid.ok(), "{}", valid.to_string());
  if (config.enable_prefix_cache) prefix_.emplace(config.n_blocks, config.block_size);
}

BlockId KvCacheManager::take_block() {
  const BlockId block = pool_.next_alloc();
  TALLY_CHECK(block != kNoBlock, "kv: no free block");
  // Eviction: the block's cached contents are about to be overwritten. Only a block nobody
  // holds may get here.
  TALLY_DCHECK(pool_.ref_count(block) == 0, "kv: evicting block {} held {} times", block,
               pool_.ref_count(block));
  if (prefix_ && prefix_->contains(block)) {
    if (offload_) offload_->store_evicted(prefix_->info_of(block), block);
    prefix_->erase(block);
  }
  return *pool_.alloc();
}

void KvCacheManager::release_block(BlockId block) {
  // Cached contents wait at the tail for a hit; an empty block is reused first.
  const bool keep = !prefix_ || prefix_->contains(block);
  pool_.unref(block, keep ? FreeEnd::kTail : FreeEnd::kHead);
}

int32_t KvCacheManager::blocks_behind_window(const Seq& s, int32_t next_pos) const {
  if (sliding_window_ <= 0) return 0;
  // The token at next_pos attends to next_pos - window + 1 ... next_pos; later ones to later.
  const int64_t first_needed = int64_t{next_pos} - sliding_window_ + 1;
  if (first_needed <= 0) return 0;
  return static_cast<int32_t>(
      std::min<int64_t>(first_needed / block_size_, static_cast<int64_t>(s.blocks.size())));
}

void KvCacheManager::drop_behind_window(Seq& s, int32_t next_pos) {
  const int32_t dead = blocks_behind_window(s, next_pos);
  for (; s.n_dropped < dead; ++s.n_dropped) {
    release_block(s.blocks[s.n_dropped]);
    s.blocks[s.n_dropped] = kNoBlock;
  }
}

int32_t KvCacheManager::blocks_freed_by_drop(const Seq& s, int32_t next_pos) const {
  const int32_t dead = blocks_behind_window(s, next_pos);
  int32_t freed = 0;
  for (int32_t i = s.n_dropped; i < dead; ++i) freed += pool_.ref_count(s.blocks[i]) == 1 ? 1 : 0;
  return freed;
}

int32_t KvCacheManager::num_dropped_blocks(SeqId seq) const {
  const Seq* s = find(seq);
  return s ? s->n_dropped : 0;
}

void KvCacheManager::force_prefix_key_for_test(std::optional<PrefixKey> key) {
  if (prefix_) prefix_->force_key_for_test(key);
}

void KvCacheManager::match_prefix(std::span<const int32_t> tokens, std::string_view salt,
                                  int32_t max_blocks, PrefixMatch& match) const {
  match.clear();
  if (!prefix_) return;
  const int32_t n_full = static_cast<int32_t>(tokens.size()) / block_size_;
  PrefixChain chain;
  for (int32_t i = 0; i < n_full; ++i) {
    const auto block_tokens = tokens.subspan(static_cast<size_t>(i) * block_size_,
                                             static_cast<size_t>(block_size_));
    const PrefixKey key = prefix_->key_of(chain, salt, block_tokens);
    const BlockId hit = i < max_blocks ? prefix_->find(key, chain, salt, block_tokens) : kNoBlock;
    if (hit == kNoBlock) {
      match.next_key = key;
      match.has_next = true;
      if (offload_ && i < max_blocks) match_tiers(tokens, salt, i, max_blocks, chain.key, match);
      break;
    }
    match.blocks.push_back(hit);
    match.n_evictable += pool_.ref_count(hit) == 0 ? 1 : 0;
    chain = prefix_->chain_of(hit);
  }
}

void KvCacheManager::match_tiers(std::span<const int32_t> tokens, std::string_view salt,
                                 int32_t first, int32_t max_blocks, PrefixKey parent_key,
                                 PrefixMatch& match) const {
  // The chain goes on by key alone: a tier block's pool serial is gone (kOffloadedSerial).
  const int32_t n_full_all = static_cast<int32_t>(tokens.size()) / block_size_;
  const int32_t n_full = std::min(n_full_all, max_blocks);
  auto block_tokens = [&](int32_t i) {
    return tokens.subspan(static_cast<size_t>(i) * block_size_, static_cast<size_t>(block_size_));
  };
  int32_t n_host = 0;
  PrefixKey key = match.next_key;  // the first block's, computed by match_prefix
  int32_t i = first;
  for (; i < n_full; ++i) {
    if (i > first) key = prefix_->key_of({parent_key, kOffloadedSerial}, salt, block_tokens(i));
    const KvTier tier = offload_->find({key, parent_key, i == 0, salt, block_tokens(i),
                                        tokens.first(static_cast<size_t>(i + 1) * block_size_)});
    if (tier == KvTier::kNone) break;
    match.tier_keys.push_back(key);
    n_host += tier == KvTier::kHost ? 1 : 0;
    parent_key = key;
  }
  const auto n_hits = static_cast<int32_t>(match.tier_keys.size());
  if (n_hits == 0) return;
  if (!offload_->worth_loading(n_host, n_hits - n_host)) {
    match.n_tier_skipped = n_hits;
    match.tier_keys.clear();
    return;  // next_key stays the first tier block's
  }
  match.n_evictable += n_hits;
  if (i < n_full) {
    match.next_key = key;  // the block that missed
  } else if (i < n_full_all) {
    match.next_key = prefix_->key_of({parent_key, kOffloadedSerial}, salt, block_tokens(i));
  } else {
    match.has_next = false;
  }
}

void KvCacheManager::set_offload(KvOffload* offload) {
  TALLY_CHECK(offload == nullptr || prefix_, "kv: offload tiers need the prefix cache");
  offload_ = offload;
}

void KvCacheManager::offload_sequence(SeqId seq) {
  if (!offload_) return;
  const Seq& s = get(seq);
  for (int32_t i = s.n_dropped; i < s.n_cached_blocks; ++i) {
    if (prefix_->contains(s.blocks[i])) {
      offload_->store_copy(prefix_->info_of(s.blocks[i]), s.blocks[i]);
    }
  }
}

bool KvCacheManager::next_uncached_key(SeqId seq, std::span<const int32_t> tokens,
                                       std::string_view salt, PrefixKey& key) const {
  const Seq* s = prefix_ ? find(seq) : nullptr;
  if (s == nullptr) return false;
  const auto begin = static_cast<size_t>(s->n_cached_blocks) * block_size_;
  if (begin + block_size_ > tokens.size()) return false;
  key = prefix_->key_of(s->chain, salt, tokens.subspan(begin, static_cast<size_t>(block_size_)));
  return true;
}

int32_t KvCacheManager::adopt_prefix(SeqId seq, const PrefixMatch& match,
                                     std::span<const int32_t> tokens, std::string_view salt) {
  TALLY_CHECK(!contains(seq), "kv: prefix adopted by existing sequence {}", seq);
  TALLY_CHECK(match.n_evictable <= pool_.n_free(), "kv: {} cached blocks to revive, {} free",
              match.n_evictable, pool_.n_free());
  Seq& s = seqs_[seq];
  for (BlockId b : match.blocks) {
    if (pool_.ref_count(b) == 0) {
      pool_.revive(b);
    } else {
      pool_.ref(b);
    }
    s.blocks.push_back(b);
  }
  if (!match.blocks.empty()) s.chain = prefix_->chain_of(match.blocks.back());
  if (offload_) offload_->note_skipped(match.n_tier_skipped);
  if (!match.tier_keys.empty()) adopt_from_tiers(s, match, tokens, salt);
  s.n_cached_blocks = static_cast<int32_t>(s.blocks.size());
  s.n_tokens = s.n_cached_blocks * block_size_;
  n_seq_tokens_ += s.n_tokens;
  return s.n_tokens;
}

void KvCacheManager::adopt_from_tiers(Seq& s, const PrefixMatch& match,
                                      std::span<const int32_t> tokens, std::string_view salt) {
  // Pinned: the evictions the loads cause (pool blocks copied down into a full host tier)
  // push out other blocks than these.
  for (const PrefixKey& key : match.tier_keys) offload_->pin(key);
  load_tier_blocks(s, match, tokens, salt);
  offload_->unpin_all();
}

void KvCacheManager::load_tier_blocks(Seq& s, const PrefixMatch& match,
                                      std::span<const int32_t> tokens, std::string_view salt) {
  for (const PrefixKey& key : match.tier_keys) {
    const auto i = static_cast<int32_t>(s.blocks.size());
    const auto block_tokens = tokens.subspan(static_cast<size_t>(i) * block_size_,
                                             static_cast<size_t>(block_size_));
    const BlockId b = take_block();
    const auto prefix = tokens.first(static_cast<size_t>(i + 1) * block_size_);
    if (!offload_->load({key, s.chain.key, i == 0, salt, block_tokens, prefix}, b)) {
      pool_.unref(b, FreeEnd::kHead);  // gone or damaged: computed instead, from here on
      return;
    }
    s.blocks.push_back(b);
    s.chain = prefix_->insert(b, key, s.chain, salt, block_tokens);
  }
}

void KvCacheManager::cache_full_blocks(SeqId seq, std::span<const int32_t> tokens,
                                       std::string_view salt) {
  if (!prefix_) return;
  Seq& s = get(seq);
  TALLY_CHECK(static_cast<int32_t>(tokens.size()) <= s.n_tokens,
              "kv: sequence {} caches {} tokens, it holds {}", seq, tokens.size(), s.n_tokens);
  int32_t n_full = static_cast<int32_t>(tokens.size()) / block_size_;
  // A chain through a dropped block cannot be rebuilt (after a truncate reset it): the
  // sequence indexes nothing more.
  if (s.n_cached_blocks < s.n_dropped) n_full = std::min(n_full, s.n_cached_blocks);
  for (int32_t i = s.n_cached_blocks; i < n_full; ++i) {
    const BlockId block = s.blocks[i];
    if (prefix_->contains(block)) {
      // Shared with a sequence that indexed it already (fork): same tokens, same prefix.
      s.chain = prefix_->chain_of(block);
      continue;
    }
    const auto block_tokens = tokens.subspan(static_cast<size_t>(i) * block_size_,
                                             static_cast<size_t>(block_size_));
    const PrefixKey key = prefix_->key_of(s.chain, salt, block_tokens);
    s.chain = prefix_->insert(block, key, s.chain, salt, block_tokens);
  }
  s.n_cached_blocks = std::max(s.n_cached_blocks, n_full);
}

double KvCacheManager::usage() const {
  return n_blocks() == 0 ? 0.0 : static_cast<double>(n_used_blocks()) / n_blocks();
}

int32_t KvCacheManager::blocks_for(int64_t n_tokens) const {
  return static_cast<int32_t>((n_tokens + block_size_ - 1) / block_size_);
}

const KvCacheManager::Seq* KvCacheManager::find(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? nullptr : &it->second;
}

KvCacheManager::Seq& KvCacheManager::get(SeqId seq) {
  auto it = seqs_.find(seq);
  TALLY_CHECK(it != seqs_.end(), "kv: unknown sequence {}", seq);
  return it->second;
}

int32_t KvCacheManager::num_tokens(SeqId seq) const {
  const Seq* s = find(seq);
  return s ? s->n_tokens : 0;
}

std::span<const BlockId> KvCacheManager::block_table(SeqId seq) const {
  const Seq* s = find(seq);
  if (!s) return {};
  return s->blocks;
}

int32_t KvCacheManager::shared_write_block(const Seq& s) const {
  // Only blocks holding tokens are ever shared (fork copies no reservation), and of those only
  // the last, partly filled one can still be written.
  const int32_t index = s.n_tokens / block_size_;
  if (index >= static_cast<int32_t>(s.blocks.size())) return -1;
  return pool_.ref_count(s.blocks[index]) > 1 ? index : -1;
}

int32_t KvCacheManager::blocks_needed(SeqId seq, int32_t n_tokens) const {
  TALLY_CHECK(n_tokens >= 0, "kv: append of {} tokens", n_tokens);
  if (n_tokens == 0) return 0;
  const Seq* s = find(seq);
  if (!s) return blocks_for(n_tokens);
  const int32_t have = static_cast<int32_t>(s->blocks.size());
  const int32_t grow = std::max(0, blocks_for(int64_t{s->n_tokens} + n_tokens) - have);
  const int32_t taken = grow + (shared_write_block(*s) >= 0 ? 1 : 0);
  return std::max(0, taken - blocks_freed_by_drop(*s, s->n_tokens));
}

bool KvCacheManager::can_append(SeqId seq, int32_t n_tokens) const {
  return blocks_needed(seq, n_tokens) <= pool_.n_free();
}

bool KvCacheManager::can_admit(SeqId seq, int32_t n_tokens) const {
  return blocks_needed(seq, n_tokens) <= pool_.n_free() - watermark_blocks_;
}

Status KvCacheManager::append(SeqId seq, int32_t n_tokens, std::vector<BlockCopy>& copies) {
  const int32_t needed = blocks_needed(seq, n_tokens);
  if (needed > pool_.n_free()) {
    return make_error(ErrorCode::kOutOfMemory,
                      "kv: sequence {} needs {} blocks for {} more tokens, {} of {} free", seq,
                      needed, n_tokens, pool_.n_free(), pool_.n_blocks());
  }
  // From here on nothing can fail: the pool holds `needed` blocks once the drop is done.
  Seq& s = seqs_[seq];
  if (n_tokens == 0) return Status::ok_status();
  drop_behind_window(s, s.n_tokens);  // the window of the first appended token
  const int32_t cow = shared_write_block(s);
  if (cow >= 0) {
    const BlockId src = s.blocks[cow];
    const BlockId dst = take_block();
    pool_.unref(src);  // still held by the other sharers
    s.blocks[cow] = dst;
    copies.push_back({seq, cow, src, dst});
  }
  const int32_t want = blocks_for(int64_t{s.n_tokens} + n_tokens);
  while (static_cast<int32_t>(s.blocks.size()) < want) s.blocks.push_back(take_block());
  s.n_tokens += n_tokens;
  n_seq_tokens_ += n_tokens;
  return Status::ok_status();
}

bool KvCacheManager::can_reserve(SeqId seq, int32_t capacity_tokens) const {
  const Seq* s = find(seq);
  const int32_t have = s ? static_cast<int32_t>(s->blocks.size()) : 0;
  return std::max(0, blocks_for(capacity_tokens) - have) <= pool_.n_free();
}

Status KvCacheManager::reserve(SeqId seq, int32_t capacity_tokens) {
  if (!can_reserve(seq, capacity_tokens)) {
    return make_error(ErrorCode::kOutOfMemory,
                      "kv: sequence {} cannot reserve {} tokens ({} blocks), {} of {} free",
                      seq, capacity_tokens, blocks_for(capacity_tokens), pool_.n_free(),
                      pool_.n_blocks());
  }
  Seq& s = seqs_[seq];
  const int32_t want = blocks_for(capacity_tokens);
  while (static_cast<int32_t>(s.blocks.size()) < want) s.blocks.push_back(take_block());
  return Status::ok_status();
}

void KvCacheManager::fork(SeqId parent, SeqId child) {
  TALLY_CHECK(!contains(child), "kv: fork into existing sequence {}", child);
  const Seq& p = get(parent);
  Seq c;
  c.n_tokens = p.n_tokens;
  c.blocks.assign(p.blocks.begin(), p.blocks.begin() + blocks_for(p.n_tokens));
  c.n_cached_blocks = p.n_cached_blocks;
  c.chain = p.chain;
  c.n_dropped = std::min(p.n_dropped, static_cast<int32_t>(c.blocks.size()));
  for (int32_t i = c.n_dropped; i < static_cast<int32_t>(c.blocks.size()); ++i) pool_.ref(c.blocks[i]);
  n_seq_tokens_ += c.n_tokens;
  seqs_.emplace(child, std::move(c));
}

void KvCacheManager::truncate(SeqId seq, int32_t n_tokens) {
  Seq& s = get(seq);
  TALLY_CHECK(n_tokens >= 0 && n_tokens <= s.n_tokens,
              "kv: truncate sequence {} to {} tokens, it has {}", seq, n_tokens, s.n_tokens);
  TALLY_CHECK(s.n_dropped == 0 || int64_t{n_tokens} - sliding_window_ + 1 >= int64_t{s.n_dropped} * block_size_,
              "kv: truncate sequence {} to {} tokens needs blocks dropped behind the window", seq, n_tokens);
  const int32_t keep = blocks_for(n_tokens);
  // Last block first, so the blocks nearest the prompt's start stay in the pool longest.
  while (static_cast<int32_t>(s.blocks.size()) > keep) {
    release_block(s.blocks.back());
    s.blocks.pop_back();
  }
  if (s.n_cached_blocks > n_tokens / block_size_) {
    // The block the next token lands in will be written: it must leave the index (a shared
    // one is copied before the write anyway). The chain is rebuilt by the next caching.
    const int32_t partial = n_tokens / block_size_;
    if (prefix_ && partial < keep && pool_.ref_count(s.blocks[partial]) == 1) {
      prefix_->erase(s.blocks[partial]);
    }
    s.n_cached_blocks = 0;
    s.chain = PrefixChain{};
  }
  n_seq_tokens_ -= s.n_tokens - n_tokens;
  s.n_tokens = n_tokens;
  drop_behind_window(s, n_tokens);
}

void KvCacheManager::free(SeqId seq) {
  Seq& s = get(seq);
  // Reverse order: a sequence's tail is the least likely to be shared again (prefix cache).
  for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it)
    if (*it != kNoBlock) release_block(*it);
  n_seq_tokens_ -= s.n_tokens;
  seqs_.erase(seq);
}

Status KvCacheManager::check_invariants() const {
  if (Status pool = pool_.check_invariants(); !pool.ok()) return pool;
  if (prefix_) TALLY_RETURN_IF_ERROR(prefix_->check_invariants());
  std::vector<int32_t> holders(pool_.n_blocks(), 0);
  std::vector<int64_t> last_holder(pool_.n_blocks(), -1);  // index of the table seen last
  int64_t tokens = 0;
  int64_t table = 0;
  for (const auto& [id, s] : seqs_) {
    ++table;
    if (static_cast<int32_t>(s.blocks.size()) < blocks_for(s.n_tokens)) {
      return make_error(ErrorCode::kInternal, "kv: sequence {} has {} tokens in {} blocks", id,
                        s.n_tokens, s.blocks.size());
    }
    for (int32_t i = 0; i < static_cast<int32_t>(s.blocks.size()); ++i) {
      const BlockId b = s.blocks[i];
      if ((b == kNoBlock) != (i < s.n_dropped)) {
        return make_error(ErrorCode::kInternal, "kv: sequence {} has block {} at {} with {} dropped", id, b, i,
                          s.n_dropped);
      }
      if (b == kNoBlock) continue;
      if (b < 0 || b >= pool_.n_blocks()) {
        return make_error(ErrorCode::kInternal, "kv: sequence {} holds bad block {}", id, b);
      }
      if (last_holder[b] == table) {
        return make_error(ErrorCode::kInternal, "kv: sequence {} holds block {} twice", id, b);
      }
      last_holder[b] = table;
      ++holders[b];
    }
    tokens += s.n_tokens;
  }
  for (BlockId b = 0; b < pool_.n_blocks(); ++b) {
    if (holders[b] != pool_.ref_count(b)) {
      return make_error(ErrorCode::kInternal, "kv: block {} held by {} tables, count {}", b,
                        holders[b], pool_.ref_count(b));
    }
  }
  if (tokens != n_seq_tokens_) {
    return make_error(ErrorCode::kInternal, "kv: sequences hold {} tokens, counter says {}",
                      tokens, n_seq_tokens_);
  }
  return Status::ok_status();
}

}  // namespace tally
