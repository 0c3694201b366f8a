#include "kv/block_pool.h"

#include "base/check.h"

namespace tally {

BlockPool::BlockPool(int32_t n_blocks)
    : ref_(n_blocks, 0), prev_(n_blocks, kNoBlock),
      next_(n_blocks, kNoBlock) {
  TALLY_CHECK(n_blocks >= 0, "block pool with {} blocks", n_blocks);
  // Ascending ids first: a fresh pool hands out 0, 1, 2, ...
  for (BlockId b = 0; b < n_blocks; ++b) push_tail(b);
}

void BlockPool::check_block(BlockId block) const {
  TALLY_CHECK(block >= 0 && block < n_blocks(), "block {} outside the pool of {}", block,
              n_blocks());
}

void BlockPool::push_tail(BlockId block) {
  prev_[block] = tail_;
  next_[block] = kNoBlock;
  if (tail_ != kNoBlock) {
    next_[tail_] = block;
  } else {
    head_ = block;
  }
  tail_ = block;
  ++n_free_;
}

void BlockPool::push_head(BlockId block) {
  prev_[block] = kNoBlock;
  next_[block] = head_;
  if (head_ != kNoBlock) {
    prev_[head_] = block;
  } else {
    tail_ = block;
  }
  head_ = block;
  ++n_free_;
}

void BlockPool::unlink(BlockId block) {
  const BlockId p = prev_[block];
  const BlockId n = next_[block];
  if (p != kNoBlock) {
    next_[p] = n;
  } else {
    head_ = n;
  }
  if (n != kNoBlock) {
    prev_[n] = p;
  } else {
    tail_ = p;
  }
  prev_[block] = next_[block] = kNoBlock;
  --n_free_;
}

std::optional<BlockId> BlockPool::alloc() {
  if (head_ == kNoBlock) return std::nullopt;
  const BlockId block = head_;
  unlink(block);
  ref_[block] = 1;
  return block;
}

void BlockPool::revive(BlockId block) {
  check_block(block);
  TALLY_CHECK(ref_[block] == 0, "revive of block {} held {} times", block, ref_[block]);
  unlink(block);
  ref_[block] = 1;
}

void BlockPool::ref(BlockId block) {
  check_block(block);
  TALLY_CHECK(ref_[block] > 0, "ref of free block {}", block);
  ++ref_[block];
}

void BlockPool::unref(BlockId block, FreeEnd end) {
  check_block(block);
  TALLY_CHECK(ref_[block] > 0, "unref of free block {}", block);
  if (--ref_[block] != 0) return;
  if (end == FreeEnd::kTail) {
    push_tail(block);
  } else {
    push_head(block);
  }
}

int32_t BlockPool::ref_count(BlockId block) const {
  check_block(block);
  return ref_[block];
}

std::vector<BlockId> BlockPool::free_list_in_order() const {
  std::vector<BlockId> order;
  order.reserve(n_free_);
  for (BlockId b = head_; b != kNoBlock && static_cast<int32_t>(order.size()) <= n_blocks();
       b = next_[b]) {
    order.push_back(b);
  }
  return order;
}

Status BlockPool::check_invariants() const {
  std::vector<uint8_t> on_list(n_blocks(), 0);
  int32_t length = 0;
  BlockId prev = kNoBlock;
  for (BlockId b = head_; b != kNoBlock; b = next_[b]) {
    if (b < 0 || b >= n_blocks()) {
      return make_error(ErrorCode::kInternal, "free list holds bad id {}", b);
    }
    if (on_list[b]) {
      return make_error(ErrorCode::kInternal, "block {} twice in the free list", b);
    }
    if (prev_[b] != prev) {
      return make_error(ErrorCode::kInternal, "block {} links back to {}, expected {}", b,
                        prev_[b], prev);
    }
    if (ref_[b] != 0) {
      return make_error(ErrorCode::kInternal, "block {} is free with {} refs", b, ref_[b]);
    }
    on_list[b] = 1;
    ++length;
    prev = b;
  }
  if (prev != tail_) {
    return make_error(ErrorCode::kInternal, "free list ends at {}, tail is {}", prev, tail_);
  }
  if (length != n_free_) {
    return make_error(ErrorCode::kInternal, "free list has {} blocks, counter says {}", length,
                      n_free_);
  }
  for (BlockId b = 0; b < n_blocks(); ++b) {
    if (ref_[b] < 0) return make_error(ErrorCode::kInternal, "block {} has {} refs", b, ref_[b]);
    if (ref_[b] == 0 && !on_list[b]) {
      return make_error(ErrorCode::kInternal, "block {} has no refs and is not free", b);
    }
  }
  return Status::ok_status();
}

}  // namespace tally
