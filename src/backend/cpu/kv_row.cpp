#include "backend/cpu/kv_row.h"

#include <cstring>

#include "base/check.h"
#include "tensor/half.h"
#include "tensor/kv_types.h"
#include "tensor/quantize.h"

namespace tally::cpu {

bool kv_type_supported(DType type) { return kv_type_is_valid(type); }

void kv_row_store(IsaLevel isa, DType type, const float* src, void* dst, int64_t n, int64_t head_dim) {
  TALLY_DCHECK(isa <= cpu_isa_level(), "ISA path {} not available", isa_level_name(isa));
  TALLY_DCHECK(kv_type_supported(type), "KV type {}", dtype_name(type));
  // q8_0 / q4_0: one quantizer for every ISA (a row is written once per token, so its cost
  // is small), so the cache holds the same bytes on every CPU.
  if (kv_type_is_blocked(type)) {
    TALLY_DCHECK(head_dim > 0 && n % head_dim == 0 && kv_types_check_shape(type, n / head_dim, head_dim).ok(),
                 "{} KV row of {} values in heads of {}", dtype_name(type), n, head_dim);
    return quantize_row_blocks(type, src, dst, n, kv_block_values(type, head_dim));
  }
  switch (isa) {
    case IsaLevel::kAvx512:
      return detail::kv_row_store_avx512(type, src, dst, n);
    case IsaLevel::kAvx2:
      return detail::kv_row_store_avx2(type, src, dst, n);
    case IsaLevel::kScalar:
      break;
  }
  uint16_t* d = static_cast<uint16_t*>(dst);
  switch (type) {
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    default:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
  }
}

void kv_row_store(DType type, const float* src, void* dst, int64_t n, int64_t head_dim) {
  kv_row_store(cpu_isa_level(), type, src, dst, n, head_dim);
}

void kv_row_load(DType type, const void* src, float* dst, int64_t n, int64_t head_dim) {
  TALLY_DCHECK(kv_type_supported(type), "KV type {}", dtype_name(type));
  if (kv_type_is_blocked(type)) return dequantize_row_blocks(type, src, dst, n, kv_block_values(type, head_dim));
  const uint16_t* s = static_cast<const uint16_t*>(src);
  switch (type) {
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    default:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
  }
}

}  // namespace tally::cpu
