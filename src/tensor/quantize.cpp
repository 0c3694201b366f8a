// Reference quantizers for the plain and 32-block types (the K-quants: quantize_k.cpp).
#include "tensor/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/check.h"
#include "tensor/quantize_internal.h"

namespace tally {

namespace {

// The 32-block types round exactly as ggml's quantize_row_*_ref (llama-quantize's output
// without an importance matrix), so a file tally writes is byte-identical to llama.cpp's:
// the step is computed in f32 from the block's extreme, values are scaled by its f32 inverse
// (not the f16-rounded step that is stored), and levels come from +0.5 / +half-range and
// truncation (roundf, half away from zero, for q8_0). `x * id` keeps f32 precision: this file
// is built without FMA contraction.

// Largest-magnitude value of the block with its sign; the first one wins a tie (as ggml).
float block_signed_extreme(const float* x) {
  float amax = 0.0f, extreme = 0.0f;
  for (int i = 0; i < kQBlock; ++i) {
    if (amax < std::fabs(x[i])) {
      amax = std::fabs(x[i]);
      extreme = x[i];
    }
  }
  return extreme;
}

float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// C's float -> integer truncation, as ggml's (int8_t) / (uint8_t) casts do for the values a
// finite block gives; NaN (from inf or NaN input) maps to 0 instead of undefined behaviour.
int truncate_level(float v) {
  if (!(v > -256.0f)) return v != v ? 0 : -256;
  return v < 256.0f ? static_cast<int>(v) : 255;
}

void quantize_q8_0(const float* src, BlockQ8_0* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQBlock;  // [32]
    float amax = 0.0f;
    for (int i = 0; i < kQBlock; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = inverse_or_zero(d);
    dst[b].d = f32_to_f16(d);
    for (int i = 0; i < kQBlock; ++i) dst[b].qs[i] = static_cast<int8_t>(std::clamp(truncate_level(std::round(x[i] * id)), -127, 127));
  }
}

// Q4_0 / Q5_0: the extreme maps to level 0 (d = extreme / -half); the far side clamps at the
// top level.
template <int kHalf>
void quantize_symmetric_levels(const float* x, uint16_t* d_out, int* q) {
  const float d = block_signed_extreme(x) / static_cast<float>(-kHalf);
  const float id = inverse_or_zero(d);
  *d_out = f32_to_f16(d);
  for (int i = 0; i < kQBlock; ++i)
    q[i] = std::clamp(truncate_level(x[i] * id + (static_cast<float>(kHalf) + 0.5f)), 0, 2 * kHalf - 1);
}

void quantize_q4_0(const float* src, BlockQ4_0* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    int q[kQBlock];
    quantize_symmetric_levels<8>(src + b * kQBlock, &dst[b].d, q);
    for (int i = 0; i < kQBlock / 2; ++i) dst[b].qs[i] = static_cast<uint8_t>(q[i] | (q[i + kQBlock / 2] << 4));
  }
}

void quantize_q5_0(const float* src, BlockQ5_0* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    int q[kQBlock];
    quantize_symmetric_levels<16>(src + b * kQBlock, &dst[b].d, q);
    detail::pack_q5(q, dst[b].qs, dst[b].qh);
  }
}

// Q4_1 / Q5_1: level 0 is the block's minimum, d = (max - min) / levels. (ggml clamps only
// q4_1's level; q5_1's (x - min) * id + 0.5 stays below 32 for finite input, so the clamp
// changes nothing there.)
template <typename Block, int kLevels>
void quantize_min_step(const float* src, Block* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQBlock;  // [32]
    float lo = std::numeric_limits<float>::max(), hi = -std::numeric_limits<float>::max();
    for (int i = 0; i < kQBlock; ++i) {
      lo = std::min(lo, x[i]);
      hi = std::max(hi, x[i]);
    }
    const float d = (hi - lo) / static_cast<float>(kLevels);
    const float id = inverse_or_zero(d);
    dst[b].d = f32_to_f16(d);
    dst[b].m = f32_to_f16(lo);
    int q[kQBlock];
    for (int i = 0; i < kQBlock; ++i) {
      q[i] = std::clamp(truncate_level((x[i] - lo) * id + 0.5f), 0, kLevels);
    }
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
