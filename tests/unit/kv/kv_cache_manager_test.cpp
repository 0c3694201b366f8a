#include "kv/kv_cache_manager.h"

#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace tally {
namespace {

KvCacheManager make_kv(int32_t n_blocks, int32_t block_size, double watermark = 0.0) {
  return KvCacheManager(KvCacheConfig{n_blocks, block_size, watermark});
}

std::vector<BlockId> table_of(const KvCacheManager& kv, SeqId seq) {
  auto t = kv.block_table(seq);
  return {t.begin(), t.end()};
}

#define EXPECT_INVARIANTS(kv)                            \
  do {                                                   \
    const Status inv_ = (kv).check_invariants();         \
    EXPECT_TRUE(inv_.ok()) << inv_.to_string();          \
  } while (0)

TEST(KvCacheManager, ValidateRejectsBadConfigs) {
  EXPECT_FALSE(KvCacheManager::validate({-1, 16, 0.0}).ok());
  EXPECT_FALSE(KvCacheManager::validate({8, 0, 0.0}).ok());
  EXPECT_FALSE(KvCacheManager::validate({8, 16, 1.0}).ok());
  EXPECT_EQ(KvCacheManager::validate({8, 16, -0.5}).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(KvCacheManager::validate({8, 16, 0.25}).ok());
}

TEST(KvCacheManager, AppendAllocatesBlocksAsTokensCrossBoundaries) {
  auto kv = make_kv(8, 4);
  std::vector<BlockCopy> copies;
  EXPECT_EQ(kv.blocks_needed(7, 5), 2);
  ASSERT_TRUE(kv.append(7, 5, copies).ok());
  EXPECT_EQ(kv.num_tokens(7), 5);
  EXPECT_EQ(table_of(kv, 7), (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(kv.blocks_needed(7, 3), 0);  // fills block 1
  EXPECT_EQ(kv.blocks_needed(7, 4), 1);
  ASSERT_TRUE(kv.append(7, 3, copies).ok());
  EXPECT_EQ(kv.n_used_blocks(), 2);
  ASSERT_TRUE(kv.append(7, 1, copies).ok());
  EXPECT_EQ(table_of(kv, 7), (std::vector<BlockId>{0, 1, 2}));
  EXPECT_TRUE(copies.empty());
  EXPECT_DOUBLE_EQ(kv.usage(), 3.0 / 8.0);
  EXPECT_EQ(kv.n_seq_tokens(), 9);
  EXPECT_EQ(kv.n_used_slots(), 12);
  EXPECT_INVARIANTS(kv);
}

TEST(KvCacheManager, FailedAppendChangesNothing) {
  auto kv = make_kv(3, 4);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.append(1, 6, copies).ok());  // 2 blocks
  EXPECT_TRUE(kv.can_append(2, 4));
  EXPECT_FALSE(kv.can_append(2, 5));
  const auto free_before = kv.pool().free_list_in_order();
  const Status s = kv.append(2, 5, copies);
  EXPECT_EQ(s.code(), ErrorCode::kOutOfMemory);
  EXPECT_NE(s.message().find("needs 2 blocks"), std::string::npos) << s.message();
  EXPECT_FALSE(kv.contains(2));
  EXPECT_EQ(kv.pool().free_list_in_order(), free_before);
  // A known sequence that cannot grow keeps its tokens and table.
  EXPECT_FALSE(kv.can_append(1, 7));
  EXPECT_FALSE(kv.append(1, 7, copies).ok());
  EXPECT_EQ(kv.num_tokens(1), 6);
  EXPECT_EQ(table_of(kv, 1).size(), 2u);
  EXPECT_TRUE(copies.empty());
  EXPECT_INVARIANTS(kv);
}

TEST(KvCacheManager, WatermarkHoldsBackBlocksFromAdmission) {
  auto kv = make_kv(10, 4, 0.2);  // 2 blocks held back
  EXPECT_EQ(kv.watermark_blocks(), 2);
  EXPECT_TRUE(kv.can_admit(1, 32));   // 8 blocks, 2 left
  EXPECT_FALSE(kv.can_admit(1, 33));  // 9 blocks
  EXPECT_TRUE(kv.can_append(1, 40));  // growth may use everything
}

TEST(KvCacheManager, ForkSharesBlocksAndCopiesOnWrite) {
  auto kv = make_kv(8, 4);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.append(1, 6, copies).ok());  // blocks 0 (full), 1 (2 of 4)
  kv.fork(1, 2);
  kv.fork(1, 3);
  EXPECT_EQ(table_of(kv, 2), table_of(kv, 1));
  EXPECT_EQ(kv.pool().ref_count(0), 3);
  EXPECT_EQ(kv.pool().ref_count(1), 3);
  EXPECT_EQ(kv.n_used_blocks(), 2);  // counted once
  EXPECT_INVARIANTS(kv);

  // The write lands in shared block 1: the writer gets a copy first.
  EXPECT_EQ(kv.blocks_needed(2, 1), 1);
  ASSERT_TRUE(kv.append(2, 1, copies).ok());
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].seq, 2);
  EXPECT_EQ(copies[0].logical_block, 1);
  EXPECT_EQ(copies[0].src, 1);
  EXPECT_EQ(copies[0].dst, 2);
  EXPECT_EQ(table_of(kv, 2), (std::vector<BlockId>{0, 2}));
  EXPECT_EQ(kv.pool().ref_count(1), 2);
  EXPECT_EQ(kv.pool().ref_count(0), 3);  // full blocks stay shared
  // Sequence 3 copies too; then sequence 1 is the last holder and writes in place.
  ASSERT_TRUE(kv.append(3, 2, copies).ok());
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[1].src, 1);
  EXPECT_EQ(kv.blocks_needed(1, 2), 0);
  ASSERT_TRUE(kv.append(1, 2, copies).ok());
  EXPECT_EQ(copies.size(), 2u);
  EXPECT_EQ(table_of(kv, 1), (std::vector<BlockId>{0, 1}));
  EXPECT_INVARIANTS(kv);
}

TEST(KvCacheManager, ForkAtABlockBoundaryNeedsNoCopy) {
  auto kv = make_kv(8, 4);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.append(1, 8, copies).ok());
  kv.fork(1, 2);
  EXPECT_EQ(kv.blocks_needed(2, 1), 1);  // a fresh block, nothing to copy
  ASSERT_TRUE(kv.append(2, 1, copies).ok());
  ASSERT_TRUE(kv.append(1, 1, copies).ok());
  EXPECT_TRUE(copies.empty());
  EXPECT_NE(table_of(kv, 1)[2], table_of(kv, 2)[2]);
  EXPECT_INVARIANTS(kv);
}

TEST(KvCacheManager, ForkedCopyOnWriteFailsCleanlyWhenThePoolIsFull) {
  auto kv = make_kv(2, 4);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.append(1, 6, copies).ok());
  kv.fork(1, 2);
  ASSERT_TRUE(kv.n_free_blocks() == 0);
  EXPECT_FALSE(kv.can_append(2, 1));  // the copy needs a block
  EXPECT_FALSE(kv.append(2, 1, copies).ok());
  EXPECT_EQ(kv.pool().ref_count(1), 2);
  EXPECT_TRUE(copies.empty());
  EXPECT_INVARIANTS(kv);
}

TEST(KvCacheManager, TruncateRollsBackAndFreesTrailingBlocks) {
  auto kv = make_kv(8, 4);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.append(1, 10, copies).ok());  // 3 blocks
  kv.truncate(1, 5);
  EXPECT_EQ(kv.num_tokens(1), 5);
  EXPECT_EQ(table_of(kv, 1), (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(kv.n_free_blocks(), 6);
  kv.truncate(1, 4);
  EXPECT_EQ(table_of(kv, 1), (std::vector<BlockId>{0}));
  kv.truncate(1, 0);
  EXPECT_TRUE(table_of(kv, 1).empty());
  EXPECT_TRUE(kv.contains(1));
  ASSERT_TRUE(kv.append(1, 3, copies).ok());
  EXPECT_EQ(kv.num_tokens(1), 3);
  EXPECT_INVARIANTS(kv);
}

TEST(KvCacheManager, TruncateIntoASharedBlockCopiesOnTheNextWrite) {
  auto kv = make_kv(8, 4);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.append(1, 8, copies).ok());
  kv.fork(1, 2);
  kv.truncate(2, 6);  // keeps blocks 0, 1, both still shared with 1
  EXPECT_EQ(kv.pool().ref_count(1), 2);
  ASSERT_TRUE(kv.append(2, 1, copies).ok());
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].logical_block, 1);
  EXPECT_EQ(kv.pool().ref_count(1), 1);
  EXPECT_INVARIANTS(kv);
}

TEST(KvCacheManager, FreeReturnsBlocksTailFirst) {
  auto kv = make_kv(4, 2);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.append(1, 6, copies).ok());  // blocks 0, 1, 2
  kv.free(1);
  EXPECT_FALSE(kv.contains(1));
  // 3 was never used; then the freed tail block 2 is evicted before the prompt's head 0.
  EXPECT_EQ(kv.pool().free_list_in_order(), (std::vector<BlockId>{3, 2, 1, 0}));
  EXPECT_EQ(kv.n_seq_tokens(), 0);
  EXPECT_INVARIANTS(kv);
}

TEST(KvCacheManager, ReserveHoldsBlocksThatAppendThenFills) {
  auto kv = make_kv(8, 4);
  std::vector<BlockCopy> copies;
  EXPECT_FALSE(kv.can_reserve(1, 33));
  EXPECT_EQ(kv.reserve(1, 33).code(), ErrorCode::kOutOfMemory);
  EXPECT_FALSE(kv.contains(1));
  ASSERT_TRUE(kv.reserve(1, 16).ok());
  EXPECT_EQ(kv.n_used_blocks(), 4);
  EXPECT_EQ(kv.num_tokens(1), 0);
  EXPECT_EQ(kv.blocks_needed(1, 16), 0);
  ASSERT_TRUE(kv.append(1, 10, copies).ok());
  EXPECT_EQ(kv.n_used_blocks(), 4);
  EXPECT_EQ(kv.n_seq_tokens(), 10);
  EXPECT_EQ(kv.n_used_slots(), 16);
  kv.fork(1, 2);  // shares the 3 blocks with tokens, not the reservation
  EXPECT_EQ(table_of(kv, 2).size(), 3u);
  EXPECT_INVARIANTS(kv);
}

TEST(KvCacheManager, RandomOperationsKeepTheInvariants) {
  // Thousands of random appends, forks, truncates and frees on a small pool, checking the
  // invariants after every operation and the all-or-nothing rule on every failure.
  auto kv = make_kv(24, 4);
  std::mt19937 rng(1234);
  std::vector<SeqId> live;
  SeqId next = 0;
  std::vector<BlockCopy> copies;
  int failures = 0, cows = 0;
  for (int op = 0; op < 5000; ++op) {
    const int kind = static_cast<int>(rng() % 10);
    if (live.empty() || kind < 4) {  // append to a new or existing sequence
      const bool fresh = live.empty() || rng() % 3 == 0;
      const SeqId seq = fresh ? next++ : live[rng() % live.size()];
      const int32_t n = 1 + static_cast<int32_t>(rng() % 9);
      const int32_t before_tokens = kv.num_tokens(seq);
      const int32_t before_free = kv.n_free_blocks();
      const int32_t needed = kv.blocks_needed(seq, n);
      const size_t before_copies = copies.size();
      const Status s = kv.append(seq, n, copies);
      ASSERT_EQ(s.ok(), needed <= before_free) << "op " << op;
      if (s.ok()) {
        ASSERT_EQ(kv.n_free_blocks(), before_free - needed) << "op " << op;
        ASSERT_EQ(kv.num_tokens(seq), before_tokens + n);
        cows += static_cast<int>(copies.size() - before_copies);
        if (fresh) live.push_back(seq);
      } else {
        ++failures;
        ASSERT_GT(needed, before_free);
        ASSERT_EQ(kv.n_free_blocks(), before_free);
        ASSERT_EQ(kv.num_tokens(seq), before_tokens);
        ASSERT_EQ(copies.size(), before_copies);
        ASSERT_EQ(kv.contains(seq), !fresh);
      }
    } else if (kind < 6) {
      const SeqId parent = live[rng() % live.size()];
      kv.fork(parent, next);
      ASSERT_EQ(table_of(kv, next), std::vector<BlockId>(kv.block_table(parent).begin(),
                                                         kv.block_table(parent).begin() +
                                                             kv.blocks_for(kv.num_tokens(parent))));
      live.push_back(next++);
    } else if (kind < 8) {
      const SeqId seq = live[rng() % live.size()];
      kv.truncate(seq, static_cast<int32_t>(rng() % (kv.num_tokens(seq) + 1)));
    } else {
      const size_t i = rng() % live.size();
      kv.free(live[i]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
    const Status inv = kv.check_invariants();
    ASSERT_TRUE(inv.ok()) << "after op " << op << ": " << inv.to_string();
  }
  EXPECT_GT(failures, 50);  // the pool really ran dry
  EXPECT_GT(cows, 20);      // and shared blocks really were written
  for (SeqId s : live) kv.free(s);
  EXPECT_EQ(kv.n_free_blocks(), kv.n_blocks());
  EXPECT_INVARIANTS(kv);
}

}  // namespace
}  // namespace tally
