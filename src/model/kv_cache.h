// The KV pool: one allocation holding K and V of every layer for n_blocks blocks of
// block_size positions, shared by all sequences. Per layer, K and V are each
//   [n_blocks][block_size][n_kv_heads][head_dim]
// so position p of a sequence lives in slot block_table[p / block_size] * block_size +
// p % block_size, and one slot holds all KV heads of one position contiguously.
//
// This class only stores and addresses data; which blocks belong to which sequence (and which
// are free) is the block allocator's business (src/kv/), passed in as block tables.
// Thread rules: forward() writes slots of the tokens it computes and reads the positions their
// block tables reach; callers must not run two forwards on one cache at once.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "model/model_config.h"
#include "tensor/dtype.h"

namespace tally {

struct KvCacheShape {
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t n_blocks = 0;
  int64_t block_size = 0;
  DType dtype = DType::kF32;  // only f32 so far (f16/bf16/int8 later)

  static KvCacheShape for_model(const ModelConfig& config, int64_t n_blocks, int64_t block_size);
  int64_t n_slots() const { return n_blocks * block_size; }
  int64_t slot_elements() const { return n_kv_heads * head_dim; }  // one position, one of K/V
  // 2 (K and V) x n_layers x n_kv_heads x head_dim x bytes(dtype).
  int64_t bytes_per_token() const;
  int64_t bytes() const { return bytes_per_token() * n_slots(); }
};

class KvCache {
 public:
  // Checks the shape (positive sizes, supported dtype, no overflow) and allocates once,
  // zero-filled.
  static Result<KvCache> create(const KvCacheShape& shape);

  KvCache(KvCache&&) noexcept = default;
  KvCache& operator=(KvCache&&) noexcept = default;
  KvCache(const KvCache&) = delete;  // gigabytes: copying is never what you want
  KvCache& operator=(const KvCache&) = delete;

  const KvCacheShape& shape() const { return shape_; }
  int64_t bytes() const { return shape_.bytes(); }

  // [n_blocks][block_size][n_kv_heads][head_dim] of one layer.
  float* k(int64_t layer) { return data_.data() + layer_offset(layer); }
  float* v(int64_t layer) { return data_.data() + layer_offset(layer) + layer_elements(); }
  const float* k(int64_t layer) const { return data_.data() + layer_offset(layer); }
  const float* v(int64_t layer) const { return data_.data() + layer_offset(layer) + layer_elements(); }

 private:
  explicit KvCache(const KvCacheShape& shape);
  int64_t layer_elements() const { return shape_.n_slots() * shape_.slot_elements(); }
  int64_t layer_offset(int64_t layer) const { return 2 * layer * layer_elements(); }

  KvCacheShape shape_;
  std::vector<float> data_;  // [n_layers][K, V][n_slots][n_kv_heads][head_dim]
};

}  // namespace tally
