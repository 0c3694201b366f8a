#include "kv/block_pool.h"

#include <vector>

#include <gtest/gtest.h>

namespace tally {
namespace {

TEST(BlockPool, AllocatesEveryBlockOnceThenRunsDry) {
  BlockPool pool(4);
  std::vector<BlockId> got;
  for (int i = 0; i < 4; ++i) {
    auto b = pool.alloc();
    ASSERT_TRUE(b.has_value());
    got.push_back(*b);
    EXPECT_EQ(pool.ref_count(*b), 1);
  }
  EXPECT_EQ(got, (std::vector<BlockId>{0, 1, 2, 3}));
  EXPECT_EQ(pool.n_free(), 0);
  EXPECT_EQ(pool.n_used(), 4);
  EXPECT_FALSE(pool.alloc().has_value());
  EXPECT_TRUE(pool.check_invariants().ok());
}

TEST(BlockPool, RefCountsKeepSharedBlocksOutOfTheFreeList) {
  BlockPool pool(3);
  const BlockId b = *pool.alloc();
  pool.ref(b);
  EXPECT_EQ(pool.ref_count(b), 2);
  pool.unref(b);
  EXPECT_EQ(pool.ref_count(b), 1);
  EXPECT_EQ(pool.n_free(), 2);
  pool.unref(b);
  EXPECT_EQ(pool.ref_count(b), 0);
  EXPECT_EQ(pool.n_free(), 3);
  EXPECT_TRUE(pool.check_invariants().ok()) << pool.check_invariants().to_string();
}

TEST(BlockPool, FreedBlocksGoToTheTailInLruOrder) {
  BlockPool pool(5);
  std::vector<BlockId> b;
  for (int i = 0; i < 5; ++i) b.push_back(*pool.alloc());
  // Free 3, 1, 4: the least recently freed comes back first.
  pool.unref(b[3]);
  pool.unref(b[1]);
  pool.unref(b[4]);
  EXPECT_EQ(pool.free_list_in_order(), (std::vector<BlockId>{3, 1, 4}));
  EXPECT_EQ(*pool.alloc(), 3);
  pool.unref(b[0]);
  EXPECT_EQ(pool.free_list_in_order(), (std::vector<BlockId>{1, 4, 0}));
  EXPECT_EQ(*pool.alloc(), 1);
  EXPECT_EQ(*pool.alloc(), 4);
  EXPECT_EQ(*pool.alloc(), 0);
  EXPECT_FALSE(pool.alloc().has_value());
  EXPECT_TRUE(pool.check_invariants().ok());
}

TEST(BlockPool, HashSlotSurvivesFreeAndIsClearedByAlloc) {
  BlockPool pool(1);
  const BlockId b = *pool.alloc();
  pool.set_hash(b, 0xabcdef);
  pool.unref(b);
  EXPECT_EQ(pool.hash(b), 0xabcdefu);  // freed but still valid: what a prefix cache reuses
  ASSERT_EQ(*pool.alloc(), b);
  EXPECT_EQ(pool.hash(b), kNoBlockHash);
}

TEST(BlockPool, EmptyPool) {
  BlockPool pool(0);
  EXPECT_FALSE(pool.alloc().has_value());
  EXPECT_EQ(pool.n_free(), 0);
  EXPECT_TRUE(pool.check_invariants().ok());
}

TEST(BlockPoolDeathTest, UnrefOfAFreeBlockIsABug) {
  BlockPool pool(2);
  EXPECT_DEATH(pool.unref(0), "unref of free block 0");
  EXPECT_DEATH(pool.ref(1), "ref of free block 1");
}

}  // namespace
}  // namespace tally
