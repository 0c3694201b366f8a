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

TEST(BlockPool, ReviveTakesAFreeBlockFromTheMiddle) {
  BlockPool pool(4);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(*pool.alloc(), i);
  for (BlockId b = 0; b < 4; ++b) pool.unref(b);
  pool.revive(2);  // a prefix-cache hit on a block nobody holds
  EXPECT_EQ(pool.ref_count(2), 1);
  EXPECT_EQ(pool.free_list_in_order(), (std::vector<BlockId>{0, 1, 3}));
  EXPECT_TRUE(pool.check_invariants().ok());
}

TEST(BlockPool, UnrefToHeadIsAllocatedFirst) {
  BlockPool pool(3);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(*pool.alloc(), i);
  pool.unref(0);
  pool.unref(1, FreeEnd::kHead);  // nothing worth keeping: reused before block 0
  pool.unref(2);
  EXPECT_EQ(pool.free_list_in_order(), (std::vector<BlockId>{1, 0, 2}));
  EXPECT_EQ(pool.next_alloc(), 1);
  EXPECT_TRUE(pool.check_invariants().ok());
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
