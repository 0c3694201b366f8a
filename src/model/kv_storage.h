// The KV pool: one allocation holding K and V of every layer for n_blocks blocks of
// block_size positions, shared by all sequences. Per layer, K and V are each
//   [n_blocks][block_size][n_kv_heads][head_dim]   of the shape's K / V type (kv_types.h)
// so position p of a sequence lives in slot block_table[p / block_size] * block_size +
// p % block_size, and one slot holds all KV heads of one position contiguously. f16 and bf16
// halve the bytes per token: values are rounded to nearest even when stored and widened back
// exactly when attention reads them (the backend's kv_write and attention ops). q8_0 (34
// bytes per 32 values) and q4_0 (18) store each slot's row as blocks of 32 in ggml's layout,
// or, for heads under 32 values, as one block a head (2 + head_dim and 2 + head_dim / 2
// bytes: tensor/kv_types.h), quantized once when the position is written; a block never spans
// two heads.
//
// This class only stores and addresses data; which blocks belong to which sequence (and which
// are free or shared) is the block allocator's business (src/kv/), passed in as block tables
// and as the copy-on-write copies it asks for (copy_block).
// Thread rules: forward() writes slots of the tokens it computes and reads the positions their
// block tables reach; callers must not run two forwards on one cache at once, nor copy_block()
// during a forward.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "base/huge_page_buffer.h"
#include "base/status.h"
#include "model/model_config.h"
#include "tensor/dtype.h"
#include "tensor/kv_types.h"

namespace tally {

struct KvStorageShape {
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t n_blocks = 0;
  int64_t block_size = 0;
  KvTypes types = DType::kF32;  // storage types of K and V

  static KvStorageShape for_model(const ModelConfig& config, int64_t n_blocks, int64_t block_size,
                                KvTypes types = {});
  int64_t n_slots() const { return n_blocks * block_size; }
  int64_t slot_elements() const { return n_kv_heads * head_dim; }  // one position, one of K/V
  // n_layers x (bytes of a K row + bytes of a V row), a row being n_kv_heads x head_dim values:
  // 4 bytes a value for f32, 2 for f16/bf16, 34/32 for q8_0, 18/32 for q4_0 (kv_row_bytes:
  // more for heads under 32 values, each with its own scale).
  int64_t bytes_per_token() const;
  int64_t bytes_per_block() const { return bytes_per_token() * block_size; }  // all layers
  int64_t bytes() const { return bytes_per_token() * n_slots(); }
};

class KvStorage {
 public:
  // Checks the shape (positive sizes, types the backend stores that split the rows, no
  // overflow) and allocates
  // once, zero-filled. `backend` writes the rows of store() (forward() writes with the
  // model's backend, the same one today).
  static Result<KvStorage> create(const KvStorageShape& shape,
                                  const Backend& backend = default_backend());

  KvStorage(KvStorage&&) noexcept = default;
  KvStorage& operator=(KvStorage&&) noexcept = default;
  KvStorage(const KvStorage&) = delete;  // gigabytes: copying is never what you want
  KvStorage& operator=(const KvStorage&) = delete;

  const KvStorageShape& shape() const { return shape_; }
  KvTypes types() const { return shape_.types; }
  int64_t bytes() const { return shape_.bytes(); }

  // Raw storage of one layer's K or V: [n_blocks][block_size][n_kv_heads][head_dim] of
  // types().k or types().v.
  std::byte* k_bytes(int64_t layer) { return data_.data() + layer_offset(layer); }
  std::byte* v_bytes(int64_t layer) { return k_bytes(layer) + k_layer_bytes(); }
  const std::byte* k_bytes(int64_t layer) const { return data_.data() + layer_offset(layer); }
  const std::byte* v_bytes(int64_t layer) const { return k_bytes(layer) + k_layer_bytes(); }
  // One layer as the attention kernel reads it.
  PagedKvLayer layer_view(int64_t layer) const {
    return {k_bytes(layer), v_bytes(layer), shape_.block_size, shape_.types.k, shape_.types.v};
  }

  // Writes one position of one layer: k and v are f32 rows [n_kv_heads][head_dim], stored at
  // `slot` in types() (rounded to nearest even or quantized; the same bits on every CPU).
  void store(int64_t layer, int64_t slot, const float* k, const float* v);
  // Reads one position's K or V row back as f32 [n_kv_heads][head_dim] (the stored values,
  // exactly): tests, tools.
  void load_k(int64_t layer, int64_t slot, float* out) const;
  void load_v(int64_t layer, int64_t slot, float* out) const;

  // Copy-on-write: block src_block's K and V of every layer into dst_block (both in
  // [0, n_blocks), checked). The engine's runner does the copies the block allocator reports
  // (kv::BlockCopy), in order, before the step's forward.
  void copy_block(int64_t src_block, int64_t dst_block);
  // The offload tiers (kv/kv_offload.h): one block's K and V of every layer as bytes_per_block()
  // bytes, layer by layer, K before V; load_block writes back what save_block read.
  void save_block(int64_t block, std::span<std::byte> out) const;
  void load_block(int64_t block, std::span<const std::byte> in);

 private:
  KvStorage(const KvStorageShape& shape, HugePageBuffer data, const Backend& backend);
  int64_t k_layer_bytes() const { return shape_.n_slots() * k_slot_bytes_; }
  int64_t v_layer_bytes() const { return shape_.n_slots() * v_slot_bytes_; }
  int64_t layer_offset(int64_t layer) const { return layer * (k_layer_bytes() + v_layer_bytes()); }

  KvStorageShape shape_;
  const Backend* backend_ = nullptr;
  int64_t k_slot_bytes_ = 0;  // one position's K row in types().k
  int64_t v_slot_bytes_ = 0;
  HugePageBuffer data_;  // [n_layers][K, V][n_slots][n_kv_heads][head_dim] of types()
};

}  // namespace tally
