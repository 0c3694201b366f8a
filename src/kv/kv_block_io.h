// How kv/ reaches the bytes of a pool block without knowing the KV layout: the offload tiers
// (kv/kv_offload.h) copy a block out before the pool reuses it and back in on a hit. The
// engine implements it over the model's KV storage (every layer's K and V of the block, in a
// fixed order); tests implement it over a toy array.
//
// Thread rules: called on the engine thread between steps (while no forward runs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kv/block_pool.h"

namespace tally {

class KvBlockIo {
 public:
  virtual ~KvBlockIo() = default;
  // Bytes of one block: its K and V in every layer.
  virtual int64_t block_bytes() const = 0;
  // Copies block `block`'s bytes into `out` (block_bytes() of them).
  virtual void save_block(BlockId block, std::span<std::byte> out) const = 0;
  // Overwrites block `block` with `in` (block_bytes() bytes saved by save_block).
  virtual void load_block(BlockId block, std::span<const std::byte> in) = 0;
};

}  // namespace tally
