// Reference quantizers for the plain and 32-block types (the K-quants: quantize_k.cpp).
#include "tensor/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "tensor/quantize_internal.h"

namespace tally {

namespace {

using detail::f16_round_up;
using detail::round_clamp;

void quantize_q8_0(const float* src, BlockQ8_0* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQBlock;  // [32]
    float amax = 0.0f;
    for (int i = 0; i < kQBlock; ++i) amax = std::max(amax, std::fabs(x[i]));
    dst[b].d = f16_round_up(amax / 127.0f);
    const float d = f16_to_f32(dst[b].d);
    for (int i = 0; i < kQBlock; ++i)
      dst[b].qs[i] = static_cast<int8_t>(d > 0.0f ? round_clamp(x[i] / d, -127, 127) : 0);
  }
}

void quantize_q4_0(const float* src, BlockQ4_0* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQBlock;  // [32]
    float extreme = 0.0f;                // the value of largest magnitude, with its sign
    for (int i = 0; i < kQBlock; ++i)
      if (std::fabs(x[i]) > std::fabs(extreme)) extreme = x[i];
    // The extreme maps to level 0 (-8); the scale is negative when the extreme is positive.
    const uint16_t mag = f16_round_up(std::fabs(extreme) / 8.0f);
    dst[b].d = static_cast<uint16_t>(extreme > 0.0f ? (mag | 0x8000u) : mag);
    const float d = f16_to_f32(dst[b].d);
    for (int i = 0; i < kQBlock / 2; ++i) {
      const int lo = d != 0.0f ? round_clamp(x[i] / d, -8, 7) + 8 : 8;
      const int hi = d != 0.0f ? round_clamp(x[i + kQBlock / 2] / d, -8, 7) + 8 : 8;
      dst[b].qs[i] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

}  // namespace

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
  const DTypeTraits& t = dtype_info(type);
  TALLY_CHECK(n >= 0 && n % t.block_size == 0, "quantize_row: {} elements of {} (block {})", n,
              t.name, t.block_size);
  const int64_t n_blocks = n / t.block_size;
  switch (type) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = f32_to_f16(src[i]);
      return;
    }
    case DType::kBF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
      return;
    }
    case DType::kQ8_0:
      return quantize_q8_0(src, static_cast<BlockQ8_0*>(dst), n_blocks);
    case DType::kQ4_0:
      return quantize_q4_0(src, static_cast<BlockQ4_0*>(dst), n_blocks);
    case DType::kQ4_K:
      return detail::quantize_q4_k(src, static_cast<BlockQ4_K*>(dst), n_blocks);
    case DType::kQ6_K:
      return detail::quantize_q6_k(src, static_cast<BlockQ6_K*>(dst), n_blocks);
    default:
      TALLY_CHECK(false, "quantize_row: no conversion for {}", t.name);
  }
}

}  // namespace tally
