// The engine's side of the KV offload tiers (kv/kv_offload.h): KvBlockIo over the model's KV
// storage, the fingerprint that keys the disk tier (the model file's bytes, the KV types and
// the storage shape), and creating the tiers from the EngineConfig.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "engine/engine.h"
#include "kv/kv_block_io.h"
#include "kv/kv_offload.h"
#include "model/kv_storage.h"

namespace tally {

// A block's K and V of every layer, as KvStorage::save_block / load_block lay them out.
class KvStorageBlockIo final : public KvBlockIo {
 public:
  explicit KvStorageBlockIo(KvStorage& kv) : kv_(kv) {}
  int64_t block_bytes() const override { return kv_.shape().bytes_per_block(); }
  void save_block(BlockId block, std::span<std::byte> out) const override {
    kv_.save_block(block, out);
  }
  void load_block(BlockId block, std::span<const std::byte> in) override {
    kv_.load_block(block, in);
  }

 private:
  KvStorage& kv_;
};

// XXH3-128 of the model file's bytes (mapped, not read through a buffer), its size, and the KV
// storage's types and shape per block: blocks written under one fingerprint are only ever read
// back under the same. kIo when the file cannot be mapped.
Result<PrefixKey> kv_offload_fingerprint(const std::string& model_path, const KvStorageShape& shape);

// The tiers the config asks for (nullptr when none), copying through `io`.
Result<std::unique_ptr<KvOffload>> engine_make_offload(const EngineConfig& config,
                                                       const KvStorageShape& shape,
                                                       KvBlockIo& io);

}  // namespace tally
