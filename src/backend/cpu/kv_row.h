// Rows of the KV cache in its storage type. f32 is stored as is; f16 and bf16 are narrowed
// from f32 with round to nearest, ties to even, and widened back exactly; q8_0 and q4_0 are
// quantized by tensor/quantize.h in blocks of kv_block_values(type, head_dim) values
// (tensor/kv_types.h: 32, or one short block a head under 32 values) and dequantized exactly.
// One scalar quantizer serves every ISA path, and every ISA path
// stores the bits of the scalar conversions in tensor/half.h (F16C / AVX-512 for whole
// vectors, the scalar code for the tail), so a cache's contents never depend on the CPU.
#pragma once

#include <cstdint>

#include "base/cpu_features.h"
#include "tensor/dtype.h"

namespace tally::cpu {

// The KV storage types: f32, f16, bf16, q8_0, q4_0.
bool kv_type_supported(DType type);

// src [n] f32 -> dst (kv_row_bytes) of `type`, with the CPU's best path or the given one.
// The row is n / head_dim heads of head_dim values (which q8_0 / q4_0 block by; the other
// types ignore it): kv_types_check_shape holds for them.
void kv_row_store(DType type, const float* src, void* dst, int64_t n, int64_t head_dim);
void kv_row_store(IsaLevel isa, DType type, const float* src, void* dst, int64_t n, int64_t head_dim);
// dst [n] f32 <- src of `type` (exact for the stored values).
void kv_row_load(DType type, const void* src, float* dst, int64_t n, int64_t head_dim);

namespace detail {
void kv_row_store_avx2(DType type, const float* src, void* dst, int64_t n);
void kv_row_store_avx512(DType type, const float* src, void* dst, int64_t n);
}  // namespace detail

}  // namespace tally::cpu
