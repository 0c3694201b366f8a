#include "model/kv_storage.h"

#include <cstring>
#include <utility>

#include "base/check.h"
#include "tensor/quantize.h"

namespace tally {

KvStorageShape KvStorageShape::for_model(const ModelConfig& c, int64_t n_blocks, int64_t block_size,
                                     KvTypes types) {
  return {c.n_layers, c.n_kv_heads, c.head_dim, n_blocks, block_size, types};
}

int64_t KvStorageShape::bytes_per_token() const {
  return n_layers * kv_types_row_bytes(types, n_kv_heads, head_dim);
}

Result<KvStorage> KvStorage::create(const KvStorageShape& s, const Backend& backend) {
  if (s.n_layers <= 0 || s.n_kv_heads <= 0 || s.head_dim <= 0 || s.n_blocks <= 0 ||
      s.block_size <= 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "kv cache: sizes must be positive (layers {}, kv heads {}, head dim {}, "
                      "blocks {}, block size {})",
                      s.n_layers, s.n_kv_heads, s.head_dim, s.n_blocks, s.block_size);
  TALLY_RETURN_IF_ERROR(kv_types_check_shape(s.types, s.n_kv_heads, s.head_dim));
  for (DType t : {s.types.k, s.types.v})
    if (!backend.kv_type_supported(t))
      return make_error(ErrorCode::kUnsupported, "kv cache: the backend does not store type {}",
                        dtype_name(t));
  int64_t elements = 0;
  if (__builtin_mul_overflow(s.n_blocks, s.block_size, &elements) ||
      __builtin_mul_overflow(elements, s.n_kv_heads * s.head_dim, &elements) ||
      __builtin_mul_overflow(elements, 2 * s.n_layers, &elements) ||
      elements > (int64_t{1} << 40) / 4)  // at most 4 bytes a value
    return make_error(ErrorCode::kOutOfMemory, "kv cache: {} blocks of {} positions is too large",
                      s.n_blocks, s.block_size);
  Result<HugePageBuffer> data = HugePageBuffer::create(static_cast<size_t>(s.bytes()));
  if (!data.ok())
    return make_error(ErrorCode::kOutOfMemory, "kv cache: {} blocks of {} positions: {}",
                      s.n_blocks, s.block_size, data.status().message());
  return KvStorage(s, std::move(data.value()), backend);
}

KvStorage::KvStorage(const KvStorageShape& shape, HugePageBuffer data, const Backend& backend)
    : shape_(shape),
      backend_(&backend),
      k_slot_bytes_(kv_row_bytes(shape.types.k, shape.n_kv_heads, shape.head_dim)),
      v_slot_bytes_(kv_row_bytes(shape.types.v, shape.n_kv_heads, shape.head_dim)),
      data_(std::move(data)) {}

void KvStorage::store(int64_t layer, int64_t slot, const float* k, const float* v) {
  TALLY_DCHECK(layer >= 0 && layer < shape_.n_layers && slot >= 0 && slot < shape_.n_slots(),
               "kv store: layer {} slot {}", layer, slot);
  KvWriteArgs w;
  w.k = k_bytes(layer);
  w.v = v_bytes(layer);
  w.k_dtype = shape_.types.k;
  w.v_dtype = shape_.types.v;
  w.n_kv_heads = shape_.n_kv_heads;
  w.head_dim = shape_.head_dim;
  w.n_tokens = 1;
  w.slots = &slot;
  w.k_rows = k;
  w.v_rows = v;
  backend_->kv_write(w);
}

void KvStorage::load_k(int64_t layer, int64_t slot, float* out) const {
  TALLY_CHECK(layer >= 0 && layer < shape_.n_layers && slot >= 0 && slot < shape_.n_slots(),
              "kv load: layer {} slot {}", layer, slot);
  dequantize_row_blocks(shape_.types.k, k_bytes(layer) + slot * k_slot_bytes_, out, shape_.slot_elements(),
                        kv_block_values(shape_.types.k, shape_.head_dim));
}

void KvStorage::load_v(int64_t layer, int64_t slot, float* out) const {
  TALLY_CHECK(layer >= 0 && layer < shape_.n_layers && slot >= 0 && slot < shape_.n_slots(),
              "kv load: layer {} slot {}", layer, slot);
  dequantize_row_blocks(shape_.types.v, v_bytes(layer) + slot * v_slot_bytes_, out, shape_.slot_elements(),
                        kv_block_values(shape_.types.v, shape_.head_dim));
}

void KvStorage::copy_block(int64_t src_block, int64_t dst_block) {
  TALLY_CHECK(src_block >= 0 && src_block < shape_.n_blocks && dst_block >= 0 &&
                  dst_block < shape_.n_blocks,
              "kv copy_block: blocks {} -> {} outside [0, {})", src_block, dst_block,
              shape_.n_blocks);
  if (src_block == dst_block) return;
  for (int64_t l = 0; l < shape_.n_layers; ++l) {
    for (auto [base, slot_bytes] : {std::pair{k_bytes(l), k_slot_bytes_}, std::pair{v_bytes(l), v_slot_bytes_}}) {
      const int64_t block_bytes = shape_.block_size * slot_bytes;  // one layer, K or V
      std::memcpy(base + dst_block * block_bytes, base + src_block * block_bytes,
                  static_cast<size_t>(block_bytes));
    }
  }
}

void KvStorage::save_block(int64_t block, std::span<std::byte> out) const {
  TALLY_CHECK(block >= 0 && block < shape_.n_blocks &&
                  static_cast<int64_t>(out.size()) == shape_.bytes_per_block(),
              "kv save_block: block {} of {}, {} bytes (a block is {})", block, shape_.n_blocks,
              out.size(), shape_.bytes_per_block());
  std::byte* at = out.data();
  for (int64_t l = 0; l < shape_.n_layers; ++l) {
    for (auto [base, slot_bytes] : {std::pair{k_bytes(l), k_slot_bytes_}, std::pair{v_bytes(l), v_slot_bytes_}}) {
      const int64_t block_bytes = shape_.block_size * slot_bytes;  // one layer, K or V
      std::memcpy(at, base + block * block_bytes, static_cast<size_t>(block_bytes));
      at += block_bytes;
    }
  }
}

void KvStorage::load_block(int64_t block, std::span<const std::byte> in) {
  TALLY_CHECK(block >= 0 && block < shape_.n_blocks &&
                  static_cast<int64_t>(in.size()) == shape_.bytes_per_block(),
              "kv load_block: block {} of {}, {} bytes (a block is {})", block, shape_.n_blocks,
              in.size(), shape_.bytes_per_block());
  const std::byte* at = in.data();
  for (int64_t l = 0; l < shape_.n_layers; ++l) {
    for (auto [base, slot_bytes] : {std::pair{k_bytes(l), k_slot_bytes_}, std::pair{v_bytes(l), v_slot_bytes_}}) {
      const int64_t block_bytes = shape_.block_size * slot_bytes;
      std::memcpy(base + block * block_bytes, at, static_cast<size_t>(block_bytes));
      at += block_bytes;
    }
  }
}

}  // namespace tally
