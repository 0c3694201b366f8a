// The prefix cache in the KV manager: chained keys, collision safety, salts, LRU eviction and
// the reference-count invariants under random admit/finish/preempt/evict sequences.
#include "kv/prefix_cache.h"

#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kv/kv_cache_manager.h"

namespace tally {
namespace {

constexpr int32_t kBs = 4;

KvCacheManager make_cached_kv(int32_t n_blocks) {
  KvCacheConfig c{n_blocks, kBs, 0.0};
  c.enable_prefix_cache = true;
  return KvCacheManager(c);
}

#define EXPECT_KV_OK(kv)                         \
  do {                                           \
    const Status inv_ = (kv).check_invariants(); \
    EXPECT_TRUE(inv_.ok()) << inv_.to_string();  \
  } while (0)

// A sequence that computes all of `tokens` and indexes its full blocks.
void compute(KvCacheManager& kv, SeqId seq, const std::vector<int32_t>& tokens,
             std::string_view salt = {}) {
  std::vector<BlockCopy> copies;
  const int32_t have = kv.num_tokens(seq);
  ASSERT_TRUE(kv.append(seq, static_cast<int32_t>(tokens.size()) - have, copies).ok());
  kv.cache_full_blocks(seq, tokens, salt);
}

int32_t hits(const KvCacheManager& kv, const std::vector<int32_t>& tokens,
             std::string_view salt = {}) {
  PrefixMatch m;
  kv.match_prefix(tokens, salt, 1 << 20, m);
  return static_cast<int32_t>(m.blocks.size());
}

TEST(PrefixCache, KeysChainThroughTheParent) {
  PrefixCache cache(4, kBs);
  const std::vector<int32_t> a{1, 2, 3, 4};
  const std::vector<int32_t> b{5, 6, 7, 8};
  const PrefixKey ka = cache.key_of({}, "", a);
  EXPECT_EQ(ka, cache.key_of({}, "", a));  // deterministic
  const PrefixChain after_a = cache.insert(0, ka, {}, "", a);
  const PrefixKey kab = cache.key_of(after_a, "", b);
  const PrefixKey kb = cache.key_of({}, "", b);
  EXPECT_NE(kab, kb);  // the same tokens after another prefix are another block
  EXPECT_NE(cache.key_of({}, "salt", a), ka);  // the salt enters the first key
  EXPECT_NE(cache.key_of({}, "", b), cache.key_of({}, "", a));
  EXPECT_EQ(cache.find(ka, {}, "", a), 0);
  EXPECT_EQ(cache.find(ka, {}, "", b), kNoBlock);  // same key, other tokens: no match
  EXPECT_TRUE(cache.check_invariants().ok());
}

TEST(PrefixCache, OnlyFullBlocksAndNeverTheWholeCap) {
  auto kv = make_cached_kv(16);
  const std::vector<int32_t> t{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // 2 full blocks + 2
  compute(kv, 1, t);
  EXPECT_EQ(kv.n_cached_blocks(), 2);
  PrefixMatch m;
  kv.match_prefix(t, "", 1, m);  // capped at one block
  EXPECT_EQ(m.blocks.size(), 1u);
  EXPECT_TRUE(m.has_next);
  EXPECT_EQ(hits(kv, t), 2);
  EXPECT_EQ(hits(kv, {1, 2, 3}), 0);  // a partial block is never a hit
  EXPECT_EQ(hits(kv, {1, 2, 3, 4, 9, 9, 9, 9}), 1);  // diverges in block 2
  EXPECT_KV_OK(kv);
}

TEST(PrefixCache, HitsShareHeldBlocksAndReviveFreedOnes) {
  auto kv = make_cached_kv(16);
  const std::vector<int32_t> t{1, 2, 3, 4, 5, 6, 7, 8, 9};
  compute(kv, 1, t);
  PrefixMatch m;
  kv.match_prefix(t, "", 2, m);
  ASSERT_EQ(m.blocks.size(), 2u);
  EXPECT_EQ(m.n_evictable, 0);  // sequence 1 still holds them
  kv.adopt_prefix(2, m);
  EXPECT_EQ(kv.num_tokens(2), 8);
  EXPECT_EQ(kv.pool().ref_count(m.blocks[0]), 2);
  EXPECT_KV_OK(kv);
  kv.free(1);
  kv.free(2);
  EXPECT_EQ(kv.n_used_blocks(), 0);  // cached blocks count as free
  kv.match_prefix(t, "", 2, m);
  EXPECT_EQ(m.n_evictable, 2);
  kv.adopt_prefix(3, m);
  EXPECT_EQ(kv.pool().ref_count(m.blocks[1]), 1);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.append(3, 1, copies).ok());
  EXPECT_TRUE(copies.empty());  // a full cached block is never written
  EXPECT_KV_OK(kv);
}

TEST(PrefixCache, SaltsNeverShare) {
  auto kv = make_cached_kv(16);
  const std::vector<int32_t> t{1, 2, 3, 4, 5, 6, 7, 8, 9};
  compute(kv, 1, t, "alice");
  EXPECT_EQ(hits(kv, t, "alice"), 2);
  EXPECT_EQ(hits(kv, t, "bob"), 0);
  EXPECT_EQ(hits(kv, t, ""), 0);
  kv.force_prefix_key_for_test(PrefixKey{7, 7});  // every key collides: salts still hold
  EXPECT_EQ(hits(kv, t, "bob"), 0);
}

TEST(PrefixCache, CollidingKeysNeverServeOtherTokens) {
  auto kv = make_cached_kv(32);
  kv.force_prefix_key_for_test(PrefixKey{1, 2});
  const std::vector<int32_t> a{1, 2, 3, 4, 5, 6, 7, 8, 0};
  const std::vector<int32_t> b{9, 9, 9, 9, 5, 6, 7, 8, 0};  // block 2 equal, parent not
  compute(kv, 1, a);
  EXPECT_EQ(hits(kv, b), 0);
  compute(kv, 2, b);
  EXPECT_EQ(kv.n_cached_blocks(), 4);  // all under one key
  PrefixMatch m;
  kv.match_prefix(b, "", 8, m);
  ASSERT_EQ(m.blocks.size(), 2u);
  EXPECT_EQ(m.blocks[0], kv.block_table(2)[0]);
  EXPECT_EQ(m.blocks[1], kv.block_table(2)[1]);
  kv.match_prefix(a, "", 8, m);
  ASSERT_EQ(m.blocks.size(), 2u);
  EXPECT_EQ(m.blocks[1], kv.block_table(1)[1]);
  EXPECT_KV_OK(kv);
}

TEST(PrefixCache, EvictsEmptyBlocksFirstThenTailBeforeHead) {
  auto kv = make_cached_kv(6);
  const std::vector<int32_t> t{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};  // 3 full + 1
  compute(kv, 1, t);
  const std::vector<BlockId> table(kv.block_table(1).begin(), kv.block_table(1).end());
  kv.free(1);
  // The partial block (not cached) and the two never used are reused before any cached one.
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.append(2, 3 * kBs, copies).ok());
  EXPECT_EQ(hits(kv, t), 3);
  ASSERT_TRUE(kv.append(2, 1, copies).ok());  // evicts the prompt's last full block first
  EXPECT_EQ(kv.block_table(2).back(), table[2]);
  EXPECT_EQ(hits(kv, t), 2);
  ASSERT_TRUE(kv.append(2, kBs, copies).ok());
  EXPECT_EQ(hits(kv, t), 1);
  EXPECT_KV_OK(kv);
}

TEST(PrefixCache, HeldBlocksAreNeverEvicted) {
  auto kv = make_cached_kv(4);
  const std::vector<int32_t> t{1, 2, 3, 4, 5, 6, 7, 8};
  compute(kv, 1, t);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.append(2, 2 * kBs, copies).ok());
  EXPECT_FALSE(kv.append(2, 1, copies).ok());  // the pool is full: nothing cached may go
  EXPECT_EQ(hits(kv, t), 2);
  EXPECT_KV_OK(kv);
}

TEST(PrefixCache, TruncateUnindexesTheBlockItWillRewrite) {
  auto kv = make_cached_kv(8);
  const std::vector<int32_t> t{1, 2, 3, 4, 5, 6, 7, 8};
  compute(kv, 1, t);
  kv.truncate(1, 6);
  EXPECT_EQ(hits(kv, t), 1);
  std::vector<int32_t> u{1, 2, 3, 4, 5, 6, 0, 0};
  compute(kv, 1, u);
  EXPECT_EQ(hits(kv, u), 2);
  EXPECT_EQ(hits(kv, t), 1);
  EXPECT_KV_OK(kv);
}

// Random admit / compute / finish / preempt / evict steps; after each the invariants hold,
// and every block a match hands out holds exactly the tokens asked for (a shadow copy of
// what each physical block was last written with).
void run_random_prefix_ops(bool colliding_keys, uint32_t seed) {
  auto kv = make_cached_kv(24);
  if (colliding_keys) kv.force_prefix_key_for_test(PrefixKey{3, 4});
  std::mt19937 rng(seed);
  std::map<BlockId, std::vector<int32_t>> content;  // block -> the whole prefix it ends
  std::map<SeqId, std::vector<int32_t>> live;        // seq -> its tokens
  SeqId next = 0;
  const std::vector<std::string> salts{"", "", "s"};
  std::map<SeqId, std::string> salt_of;
  auto write = [&](SeqId s) {
    const std::vector<int32_t>& t = live[s];
    auto table = kv.block_table(s);
    for (size_t i = 0; i * kBs < t.size(); ++i) {
      const size_t end = std::min(t.size(), (i + 1) * kBs);
      if (end % kBs != 0) continue;  // only full blocks matter for matches
      if (kv.pool().ref_count(table[i]) == 1 || content[table[i]].empty()) {
        content[table[i]].assign(t.begin(), t.begin() + static_cast<ptrdiff_t>(end));
      }
    }
  };
  for (int step = 0; step < 4000; ++step) {
    const int op = static_cast<int>(rng() % 4);
    if (op <= 1 && live.size() < 6) {  // admit: a prompt from a few shared stems
      std::vector<int32_t> t;
      const int stem = static_cast<int>(rng() % 3);
      const int len = 1 + static_cast<int>(rng() % 14);
      for (int i = 0; i < len; ++i) t.push_back(i < 9 ? stem * 10 + (i % 5) : int(rng() % 4));
      const std::string& salt = salts[rng() % salts.size()];
      PrefixMatch m;
      kv.match_prefix(t, salt, (len - 1) / kBs, m);
      for (size_t i = 0; i < m.blocks.size(); ++i) {
        const std::vector<int32_t> want(t.begin(), t.begin() + static_cast<ptrdiff_t>((i + 1) * kBs));
        ASSERT_EQ(content[m.blocks[i]], want) << "step " << step << ": a hit on other tokens";
      }
      const int32_t cached = static_cast<int32_t>(m.blocks.size()) * kBs;
      if (kv.blocks_for(len) - static_cast<int32_t>(m.blocks.size()) + m.n_evictable >
          kv.n_free_blocks()) {
        continue;
      }
      const SeqId s = next++;
      if (!m.blocks.empty()) kv.adopt_prefix(s, m);
      std::vector<BlockCopy> copies;
      ASSERT_TRUE(kv.append(s, len - cached, copies).ok());
      live[s] = t;
      salt_of[s] = salt;
      write(s);
      kv.cache_full_blocks(s, t, salt);
    } else if (op == 2 && !live.empty()) {  // finish or preempt: both free every block
      auto it = live.begin();
      std::advance(it, static_cast<ptrdiff_t>(rng() % live.size()));
      kv.free(it->first);
      live.erase(it);
    } else if (!live.empty()) {  // grow (decode): may evict cached blocks
      auto it = live.begin();
      std::advance(it, static_cast<ptrdiff_t>(rng() % live.size()));
      std::vector<BlockCopy> copies;
      if (!kv.append(it->first, 1, copies).ok()) continue;
      it->second.push_back(static_cast<int32_t>(rng() % 4));
      write(it->first);
      kv.cache_full_blocks(it->first, it->second, salt_of[it->first]);
    }
    const Status inv = kv.check_invariants();
    ASSERT_TRUE(inv.ok()) << "step " << step << ": " << inv.to_string();
  }
}

TEST(PrefixCache, RandomOpsKeepInvariantsAndServeOnlyEqualTokens) {
  run_random_prefix_ops(false, 1);
  run_random_prefix_ops(false, 2);
}

TEST(PrefixCache, RandomOpsWithEveryKeyCollidingStillServeOnlyEqualTokens) {
  run_random_prefix_ops(true, 3);
}

}  // namespace
}  // namespace tally
