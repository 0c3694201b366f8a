// Sliding-window block dropping in KvCacheManager (no model): blocks behind the window of the
// next token go back to the pool as positions advance, with refcounts, forks, speculation
// rollback, preemption (free) and the prefix cache.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kv/kv_cache_manager.h"

namespace tally {
namespace {

// 4-token blocks, a window of 6: a token at position p needs p - 5 ... p.
KvCacheManager make_window_kv(int32_t n_blocks, bool prefix_cache = false) {
  KvCacheConfig c;
  c.n_blocks = n_blocks;
  c.block_size = 4;
  c.watermark = 0.0;
  c.enable_prefix_cache = prefix_cache;
  c.sliding_window = 6;
  return KvCacheManager(c);
}

#define EXPECT_INVARIANTS(kv)                    \
  do {                                           \
    const Status inv_ = (kv).check_invariants(); \
    EXPECT_TRUE(inv_.ok()) << inv_.to_string();  \
  } while (0)

void append_ok(KvCacheManager& kv, SeqId seq, int32_t n) {
  std::vector<BlockCopy> copies;
  const Status st = kv.append(seq, n, copies);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_TRUE(copies.empty());
}

TEST(KvWindow, ValidateRejectsNegativeWindow) {
  KvCacheConfig c{8, 4, 0.0};
  c.sliding_window = -1;
  EXPECT_EQ(KvCacheManager::validate(c).code(), ErrorCode::kInvalidArgument);
}

TEST(KvWindow, DecodeFreesBlocksAsTheWindowPasses) {
  auto kv = make_window_kv(16);
  append_ok(kv, 1, 8);  // prefill 0..7: nothing behind the window of position 0
  EXPECT_EQ(kv.n_used_blocks(), 2);
  EXPECT_EQ(kv.num_dropped_blocks(1), 0);
  // Decode: the token at p drops the blocks wholly before p - 5.
  for (int32_t p = 8; p < 40; ++p) {
    append_ok(kv, 1, 1);
    const int32_t first_needed = p - 5;
    EXPECT_EQ(kv.num_dropped_blocks(1), first_needed / 4) << p;
    const auto table = kv.block_table(1);
    for (int32_t b = 0; b < static_cast<int32_t>(table.size()); ++b)
      EXPECT_EQ(table[b] == kNoBlock, b < first_needed / 4) << p << " " << b;
    EXPECT_LE(kv.n_used_blocks(), 3) << p;  // ceil((6 + 1) / 4) + 1
    EXPECT_INVARIANTS(kv);
  }
  EXPECT_EQ(kv.num_tokens(1), 40);
  kv.free(1);
  EXPECT_EQ(kv.n_free_blocks(), 16);
  EXPECT_INVARIANTS(kv);
}

TEST(KvWindow, ChunkedPrefillDropsBehindEachChunksFirstToken) {
  auto kv = make_window_kv(16);
  append_ok(kv, 1, 16);  // chunk 0..15
  EXPECT_EQ(kv.num_dropped_blocks(1), 0);
  append_ok(kv, 1, 16);  // chunk 16..31: position 16 needs 11.. -> blocks 0, 1 dropped
  EXPECT_EQ(kv.num_dropped_blocks(1), 2);
  EXPECT_EQ(kv.n_used_blocks(), 6);
  EXPECT_INVARIANTS(kv);
}

TEST(KvWindow, SpeculationRollbackKeepsWhatTheNextTokenNeeds) {
  auto kv = make_window_kv(16);
  append_ok(kv, 1, 10);
  append_ok(kv, 1, 5);  // verify step: 10..14, drops behind position 10 (5..): block 0
  EXPECT_EQ(kv.num_dropped_blocks(1), 1);
  kv.truncate(1, 11);  // one accepted: the next token at 11 needs 6.. -> block 1 stays
  EXPECT_EQ(kv.num_dropped_blocks(1), 1);
  EXPECT_NE(kv.block_table(1)[1], kNoBlock);
  EXPECT_INVARIANTS(kv);
  append_ok(kv, 1, 3);  // 11..13
  kv.truncate(1, 14);   // all accepted: position 14 needs 9.. -> block 1 dropped too
  EXPECT_EQ(kv.num_dropped_blocks(1), 2);
  EXPECT_INVARIANTS(kv);
  // Cutting below what the dropped blocks allowed is a bug in the caller.
  EXPECT_DEATH(kv.truncate(1, 12), "dropped behind the window");
}

TEST(KvWindow, ForkSharesOnlyTheLiveBlocks) {
  auto kv = make_window_kv(16);
  append_ok(kv, 1, 12);
  append_ok(kv, 1, 1);  // position 12 needs 7.. -> block 0 dropped
  ASSERT_EQ(kv.num_dropped_blocks(1), 1);
  kv.fork(1, 2);
  EXPECT_EQ(kv.num_dropped_blocks(2), 1);
  EXPECT_EQ(kv.block_table(2)[0], kNoBlock);
  EXPECT_EQ(kv.pool().ref_count(kv.block_table(1)[1]), 2);
  EXPECT_INVARIANTS(kv);
  // The child's next token writes into the shared last block: copy-on-write as usual.
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.append(2, 1, copies).ok());
  EXPECT_EQ(copies.size(), 1u);
  // Each drops on its own; a block both hold is freed when the second lets go.
  for (int i = 0; i < 8; ++i) {
    append_ok(kv, 1, 1);
    ASSERT_TRUE(kv.append(2, 1, copies).ok());
  }
  EXPECT_INVARIANTS(kv);
  kv.free(1);
  EXPECT_INVARIANTS(kv);
  kv.free(2);
  EXPECT_EQ(kv.n_free_blocks(), 16);
  EXPECT_INVARIANTS(kv);
}

TEST(KvWindow, PreemptionFreesTheLiveBlocksAndRecomputeStartsOver) {
  auto kv = make_window_kv(8);
  append_ok(kv, 1, 8);
  for (int i = 0; i < 12; ++i) append_ok(kv, 1, 1);
  const int32_t used = kv.n_used_blocks();
  EXPECT_LE(used, 3);
  kv.free(1);  // preempted
  EXPECT_EQ(kv.n_free_blocks(), 8);
  append_ok(kv, 1, 20);  // recomputed in one chunk: every block, then dropping resumes
  EXPECT_EQ(kv.n_used_blocks(), 5);
  append_ok(kv, 1, 1);
  EXPECT_EQ(kv.num_dropped_blocks(1), 3);  // position 20 needs 15..
  EXPECT_INVARIANTS(kv);
}

TEST(KvWindow, DroppedBlocksStayIndexedForPrefixHits) {
  auto kv = make_window_kv(16, /*prefix_cache=*/true);
  std::vector<int32_t> tokens(24);
  std::iota(tokens.begin(), tokens.end(), 100);
  append_ok(kv, 1, 16);
  kv.cache_full_blocks(1, std::span(tokens).first(16), "");
  append_ok(kv, 1, 8);  // position 16 needs 11.. -> blocks 0, 1 dropped, still indexed
  kv.cache_full_blocks(1, tokens, "");
  ASSERT_EQ(kv.num_dropped_blocks(1), 2);
  EXPECT_EQ(kv.n_cached_blocks(), 6);
  EXPECT_INVARIANTS(kv);
  // A second request with the same prompt finds all six blocks (two of them free now).
  PrefixMatch m;
  kv.match_prefix(tokens, "", 100, m);
  EXPECT_EQ(m.n_blocks(), 6);
  EXPECT_EQ(m.n_evictable, 2);
  EXPECT_EQ(kv.adopt_prefix(2, m), 24);
  EXPECT_INVARIANTS(kv);
  append_ok(kv, 2, 1);  // its own window: position 24 needs 19.. -> blocks 0-3 dropped
  EXPECT_EQ(kv.num_dropped_blocks(2), 4);
  EXPECT_INVARIANTS(kv);
}

TEST(KvWindow, NoWindowKeepsEveryBlock) {
  KvCacheManager kv(KvCacheConfig{16, 4, 0.0});
  append_ok(kv, 1, 8);
  for (int i = 0; i < 30; ++i) append_ok(kv, 1, 1);
  EXPECT_EQ(kv.num_dropped_blocks(1), 0);
  EXPECT_EQ(kv.n_used_blocks(), 10);
}

}  // namespace
}  // namespace tally
