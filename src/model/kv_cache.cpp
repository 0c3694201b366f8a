#include "model/kv_cache.h"

namespace tally {

KvCacheShape KvCacheShape::for_model(const ModelConfig& c, int64_t n_blocks, int64_t block_size) {
  return {c.n_layers, c.n_kv_heads, c.head_dim, n_blocks, block_size, DType::kF32};
}

int64_t KvCacheShape::bytes_per_token() const {
  return 2 * n_layers * n_kv_heads * head_dim * dtype_info(dtype).block_bytes / dtype_info(dtype).block_size;
}

Result<KvCache> KvCache::create(const KvCacheShape& s) {
  if (s.n_layers <= 0 || s.n_kv_heads <= 0 || s.head_dim <= 0 || s.n_blocks <= 0 || s.block_size <= 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "kv cache: sizes must be positive (layers {}, kv heads {}, head dim {}, blocks {}, block size {})",
                      s.n_layers, s.n_kv_heads, s.head_dim, s.n_blocks, s.block_size);
  if (s.dtype != DType::kF32)
    return make_error(ErrorCode::kUnsupported, "kv cache: type {} is not supported yet (f32)", dtype_name(s.dtype));
  int64_t elements = 0;
  if (__builtin_mul_overflow(s.n_blocks, s.block_size, &elements) ||
      __builtin_mul_overflow(elements, s.n_kv_heads * s.head_dim, &elements) ||
      __builtin_mul_overflow(elements, 2 * s.n_layers, &elements) ||
      elements > (int64_t{1} << 40) / static_cast<int64_t>(sizeof(float)))
    return make_error(ErrorCode::kOutOfMemory, "kv cache: {} blocks of {} positions is too large", s.n_blocks,
                      s.block_size);
  return KvCache(s);
}

KvCache::KvCache(const KvCacheShape& shape)
    : shape_(shape), data_(static_cast<size_t>(2 * shape.n_layers * shape.n_slots() * shape.slot_elements())) {}

}  // namespace tally
