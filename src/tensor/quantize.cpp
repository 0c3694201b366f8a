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

// Largest-magnitude value of the block's n values with its sign; the first one wins a tie (as
// ggml).
float block_signed_extreme(const float* x, int n) {
  float amax = 0.0f, extreme = 0.0f;
  for (int i = 0; i < n; ++i) {
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

// One q8_0 block of n <= 32 values (32: ggml's, fewer: quant_blocks.h's short blocks): the
// levels into qs [n]; returns the f16 d.
uint16_t quantize_q8_0_block(const float* x, int n, int8_t* qs) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = inverse_or_zero(d);
  for (int i = 0; i < n; ++i) qs[i] = static_cast<int8_t>(std::clamp(truncate_level(std::round(x[i] * id)), -127, 127));
  return f32_to_f16(d);
}

void quantize_q8_0(const float* src, BlockQ8_0* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) dst[b].d = quantize_q8_0_block(src + b * kQBlock, kQBlock, dst[b].qs);
}

// Q4_0 / Q5_0, a block of n <= 32 values: the extreme maps to level 0 (d = extreme / -half);
// the far side clamps at the top level. The levels into q [n]; returns the f16 d.
template <int kHalf>
uint16_t quantize_symmetric_levels(const float* x, int n, int* q) {
  const float d = block_signed_extreme(x, n) / static_cast<float>(-kHalf);
  const float id = inverse_or_zero(d);
  for (int i = 0; i < n; ++i)
    q[i] = std::clamp(truncate_level(x[i] * id + (static_cast<float>(kHalf) + 0.5f)), 0, 2 * kHalf - 1);
  return f32_to_f16(d);
}

// One q4_0 block of n <= 32 values (even): value j < n/2 in the low nibble of qs[j], the rest
// in the high nibbles (quant_blocks.h). Returns the f16 d.
uint16_t quantize_q4_0_block(const float* x, int n, uint8_t* qs) {
  int q[kQBlock];
  const uint16_t d = quantize_symmetric_levels<8>(x, n, q);
  for (int i = 0; i < n / 2; ++i) qs[i] = static_cast<uint8_t>(q[i] | (q[i + n / 2] << 4));
  return d;
}

void quantize_q4_0(const float* src, BlockQ4_0* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) dst[b].d = quantize_q4_0_block(src + b * kQBlock, kQBlock, dst[b].qs);
}

void quantize_q5_0(const float* src, BlockQ5_0* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    int q[kQBlock];
    dst[b].d = quantize_symmetric_levels<16>(src + b * kQBlock, kQBlock, q);
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

bool quant_block_values_valid(DType type, int64_t block_values) {
  if (dtype_has_row_conversion(type) && block_values == dtype_info(type).block_size) return true;
  if (type != DType::kQ8_0 && type != DType::kQ4_0) return false;
  return block_values > 0 && kQBlock % block_values == 0 && (type == DType::kQ8_0 || block_values % 2 == 0);
}

int64_t row_blocks_bytes(DType type, int64_t n, int64_t block_values) {
  if (type != DType::kQ8_0 && type != DType::kQ4_0) return dtype_row_bytes(type, n);
  const int64_t block = type == DType::kQ8_0 ? q8_0_block_bytes(block_values) : q4_0_block_bytes(block_values);
  return n / block_values * block;
}

void quantize_row_blocks(DType type, const float* src, void* dst, int64_t n, int64_t block_values) {
  TALLY_CHECK(quant_block_values_valid(type, block_values) && n >= 0 && n % block_values == 0,
              "quantize_row_blocks: {} elements of {} in blocks of {}", n, dtype_name(type), block_values);
  // q8_0 / q4_0 take the loop below for every length (32 included: ggml's bytes, as tested).
  if (type != DType::kQ8_0 && type != DType::kQ4_0) return quantize_row(type, src, dst, n);
  const int len = static_cast<int>(block_values);
  auto* block = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < n / block_values; ++b) {
    const float* x = src + b * block_values;  // [block_values]
    uint16_t d = 0;
    if (type == DType::kQ8_0) {
      d = quantize_q8_0_block(x, len, reinterpret_cast<int8_t*>(block + sizeof d));
    } else {
      d = quantize_q4_0_block(x, len, block + sizeof d);
    }
    std::memcpy(block, &d, sizeof d);
    block += row_blocks_bytes(type, block_values, block_values);
  }
}

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
