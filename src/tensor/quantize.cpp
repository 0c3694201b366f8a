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

// Q5_0: as Q4_0 with 32 levels; the extreme maps to level 0 (-16).
void quantize_q5_0(const float* src, BlockQ5_0* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQBlock;  // [32]
    float extreme = 0.0f;
    for (int i = 0; i < kQBlock; ++i)
      if (std::fabs(x[i]) > std::fabs(extreme)) extreme = x[i];
    const uint16_t mag = f16_round_up(std::fabs(extreme) / 16.0f);
    dst[b].d = static_cast<uint16_t>(extreme > 0.0f ? (mag | 0x8000u) : mag);
    const float d = f16_to_f32(dst[b].d);
    int q[kQBlock];
    for (int i = 0; i < kQBlock; ++i) q[i] = d != 0.0f ? round_clamp(x[i] / d, -16, 15) + 16 : 16;
    detail::pack_q5(q, dst[b].qs, dst[b].qh);
  }
}

// Q4_1 / Q5_1: the block's minimum (rounded down to f16) is level 0, so nothing clamps below;
// the step (rounded up) takes the maximum within the top level.
template <typename Block, int kLevels>
void quantize_min_step(const float* src, Block* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQBlock;  // [32]
    float lo = x[0], hi = x[0];
    for (int i = 1; i < kQBlock; ++i) {
      lo = std::min(lo, x[i]);
      hi = std::max(hi, x[i]);
    }
    dst[b].m = detail::f16_round_down(lo);
    const float m = f16_to_f32(dst[b].m);
    dst[b].d = f16_round_up(std::max(0.0f, (hi - m) / static_cast<float>(kLevels)));
    const float d = f16_to_f32(dst[b].d);
    int q[kQBlock];
    for (int i = 0; i < kQBlock; ++i) q[i] = d > 0.0f ? round_clamp((x[i] - m) / d, 0, kLevels) : 0;
    if constexpr (kLevels == 15) {
      for (int i = 0; i < kQBlock / 2; ++i)
        dst[b].qs[i] = static_cast<uint8_t>(q[i] | (q[i + kQBlock / 2] << 4));
    } else {
      detail::pack_q5(q, dst[b].qs, dst[b].qh);
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
    case DType::kQ4_1:
      return quantize_min_step<BlockQ4_1, 15>(src, static_cast<BlockQ4_1*>(dst), n_blocks);
    case DType::kQ5_0:
      return quantize_q5_0(src, static_cast<BlockQ5_0*>(dst), n_blocks);
    case DType::kQ5_1:
      return quantize_min_step<BlockQ5_1, 31>(src, static_cast<BlockQ5_1*>(dst), n_blocks);
    case DType::kQ5_K:
      return detail::quantize_q5_k(src, static_cast<BlockQ5_K*>(dst), n_blocks);
    case DType::kQ3_K:
      return detail::quantize_q3_k(src, static_cast<BlockQ3_K*>(dst), n_blocks);
    case DType::kQ2_K:
      return detail::quantize_q2_k(src, static_cast<BlockQ2_K*>(dst), n_blocks);
    case DType::kIQ4_NL:
      return detail::quantize_iq4_nl(src, static_cast<BlockIQ4_NL*>(dst), n_blocks);
    case DType::kIQ4_XS:
      return detail::quantize_iq4_xs(src, static_cast<BlockIQ4_XS*>(dst), n_blocks);
    default:
      TALLY_CHECK(false, "quantize_row: no conversion for {}", t.name);
  }
}

}  // namespace tally
