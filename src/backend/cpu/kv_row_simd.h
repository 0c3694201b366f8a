// kv_row_store over a SIMD primitive set S with 16-bit loads and stores (simd_half_*.h).
// Include only from *_avx2.cpp / *_avx512.cpp, after the primitive header: internal linkage.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"
#include "tensor/half.h"

namespace tally::cpu {
namespace {

template <class S>
void kv_row_store_simd(DType type, const float* src, void* dst, int64_t n) {
  constexpr int kW = S::kWidth;
  int64_t i = 0;
  switch (type) {
    case DType::kF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (; i + kW <= n; i += kW) S::store_f16(d + i, S::load(src + i));
      for (; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    case DType::kBF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (; i + kW <= n; i += kW) S::store_bf16(d + i, S::load(src + i));
      for (; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    default:  // f32 (callers check the type)
      __builtin_memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
  }
}

}  // namespace
}  // namespace tally::cpu
