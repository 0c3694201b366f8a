// Scalar dequantization of whole rows: the reference the kernels and the tests rest on.
#include <cstring>

#include "base/check.h"
#include "tensor/half.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

namespace tally {

namespace {

// One q8_0 / q4_0 block of n <= 32 values (quant_blocks.h): d times the levels in qs.
void dequantize_q8_0_block(uint16_t d16, const int8_t* qs, int n, float* out) {
  const float d = f16_to_f32(d16);
  for (int i = 0; i < n; ++i) out[i] = d * static_cast<float>(qs[i]);
}

void dequantize_q4_0_block(uint16_t d16, const uint8_t* qs, int n, float* out) {
  const float d = f16_to_f32(d16);
  for (int i = 0; i < n / 2; ++i) {
    out[i] = d * static_cast<float>((qs[i] & 15) - 8);
    out[i + n / 2] = d * static_cast<float>((qs[i] >> 4) - 8);
  }
}

void dequantize_q8_0(const BlockQ8_0* blocks, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) dequantize_q8_0_block(blocks[b].d, blocks[b].qs, kQBlock, dst + b * kQBlock);
}

void dequantize_q4_0(const BlockQ4_0* blocks, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) dequantize_q4_0_block(blocks[b].d, blocks[b].qs, kQBlock, dst + b * kQBlock);
}

// Q4_K and Q5_K: Quant(block, i) is element i's 4- or 5-bit quant.
template <typename Block, int (*Quant)(const Block&, int)>
void dequantize_q45_k(const Block* blocks, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const Block& blk = blocks[b];
    const float d = f16_to_f32(blk.d);
    const float dmin = f16_to_f32(blk.dmin);
    float* out = dst + b * kQKBlock;  // [256]
    for (int j = 0; j < 8; ++j) {
      int sc = 0, m = 0;
      q4k_scale_min(blk.scales, j, &sc, &m);
      const float step = d * static_cast<float>(sc);
      const float offset = dmin * static_cast<float>(m);
      for (int i = j * 32; i < j * 32 + 32; ++i)
        out[i] = step * static_cast<float>(Quant(blk, i)) - offset;
    }
  }
}

// Q6_K and Q3_K: 16 sub-blocks of 16, value = d * Scale(block, j) * Weight(block, i), both
// signed (the quants' offsets already subtracted).
template <typename Block, int (*Scale)(const Block&, int), int (*Weight)(const Block&, int)>
void dequantize_sym16(const Block* blocks, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const Block& blk = blocks[b];
    const float d = f16_to_f32(blk.d);
    float* out = dst + b * kQKBlock;  // [256]
    for (int j = 0; j < 16; ++j) {
      const float step = d * static_cast<float>(Scale(blk, j));
      for (int i = j * 16; i < j * 16 + 16; ++i) out[i] = step * static_cast<float>(Weight(blk, i));
    }
  }
}

int q6k_weight(const BlockQ6_K& b, int i) { return q6k_quant(b, i) - 32; }
int q3k_weight(const BlockQ3_K& b, int i) { return q3k_quant(b, i) - 4; }

void dequantize_q4_1(const BlockQ4_1* blocks, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(blocks[b].d), m = f16_to_f32(blocks[b].m);
    for (int i = 0; i < kQBlock; ++i)
      dst[b * kQBlock + i] = d * static_cast<float>(q32_nibble(blocks[b].qs, i)) + m;
  }
}

void dequantize_q5_0(const BlockQ5_0* blocks, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    for (int i = 0; i < kQBlock; ++i) {
      const int q = q32_nibble(blocks[b].qs, i) | q5_high(blocks[b].qh, i);
      dst[b * kQBlock + i] = d * static_cast<float>(q - 16);
    }
  }
}

void dequantize_q5_1(const BlockQ5_1* blocks, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(blocks[b].d), m = f16_to_f32(blocks[b].m);
    for (int i = 0; i < kQBlock; ++i) {
      const int q = q32_nibble(blocks[b].qs, i) | q5_high(blocks[b].qh, i);
      dst[b * kQBlock + i] = d * static_cast<float>(q) + m;
    }
  }
}

void dequantize_q2_k(const BlockQ2_K* blocks, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ2_K& blk = blocks[b];
    const float d = f16_to_f32(blk.d);
    const float dmin = f16_to_f32(blk.dmin);
    float* out = dst + b * kQKBlock;  // [256]
    for (int j = 0; j < 16; ++j) {
      const float step = d * static_cast<float>(blk.scales[j] & 15);
      const float offset = dmin * static_cast<float>(blk.scales[j] >> 4);
      for (int i = j * 16; i < j * 16 + 16; ++i)
        out[i] = step * static_cast<float>(k_quant_2bits(blk.qs, i)) - offset;
    }
  }
}

void dequantize_iq4_nl(const BlockIQ4_NL* blocks, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    for (int i = 0; i < kQBlock; ++i)
      dst[b * kQBlock + i] = d * static_cast<float>(kIq4Values[q32_nibble(blocks[b].qs, i)]);
  }
}

void dequantize_iq4_xs(const BlockIQ4_XS* blocks, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockIQ4_XS& blk = blocks[b];
    const float d = f16_to_f32(blk.d);
    for (int j = 0; j < 8; ++j) {
      const float step = d * static_cast<float>(iq4xs_scale(blk, j) - 32);
      for (int i = 0; i < 32; ++i)
        dst[b * kQKBlock + 32 * j + i] =
            step * static_cast<float>(kIq4Values[q32_nibble(blk.qs + 16 * j, i)]);
    }
  }
}

}  // namespace

void dequantize_row_blocks(DType type, const void* src, float* dst, int64_t n, int64_t block_values) {
  TALLY_CHECK(quant_block_values_valid(type, block_values) && n >= 0 && n % block_values == 0,
              "dequantize_row_blocks: {} elements of {} in blocks of {}", n, dtype_name(type), block_values);
  if (type != DType::kQ8_0 && type != DType::kQ4_0) return dequantize_row(type, src, dst, n);
  const int len = static_cast<int>(block_values);
  const auto* block = static_cast<const uint8_t*>(src);
  for (int64_t b = 0; b < n / block_values; ++b) {
    uint16_t d = 0;
    std::memcpy(&d, block, sizeof d);
    if (type == DType::kQ8_0)
      dequantize_q8_0_block(d, reinterpret_cast<const int8_t*>(block + sizeof d), len, dst + b * block_values);
    else
      dequantize_q4_0_block(d, block + sizeof d, len, dst + b * block_values);
    block += row_blocks_bytes(type, block_values, block_values);
  }
}

bool dtype_has_row_conversion(DType type) {
  switch (type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_K:
    case DType::kQ6_K:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ5_K:
    case DType::kQ3_K:
    case DType::kQ2_K:
    case DType::kIQ4_NL:
    case DType::kIQ4_XS:
      return true;
    default:
      return false;
  }
}

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  const DTypeTraits& t = dtype_info(type);
  TALLY_CHECK(n >= 0 && n % t.block_size == 0, "dequantize_row: {} elements of {} (block {})", n,
              t.name, t.block_size);
  const int64_t n_blocks = n / t.block_size;
  switch (type) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(h[i]);
      return;
    }
    case DType::kBF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
      return;
    }
    case DType::kQ8_0:
      return dequantize_q8_0(static_cast<const BlockQ8_0*>(src), dst, n_blocks);
    case DType::kQ4_0:
      return dequantize_q4_0(static_cast<const BlockQ4_0*>(src), dst, n_blocks);
    case DType::kQ4_K:
      return dequantize_q45_k<BlockQ4_K, q4k_quant>(static_cast<const BlockQ4_K*>(src), dst,
                                                    n_blocks);
    case DType::kQ6_K:
      return dequantize_sym16<BlockQ6_K, q6k_signed_scale, q6k_weight>(
          static_cast<const BlockQ6_K*>(src), dst, n_blocks);
    case DType::kQ4_1:
      return dequantize_q4_1(static_cast<const BlockQ4_1*>(src), dst, n_blocks);
    case DType::kQ5_0:
      return dequantize_q5_0(static_cast<const BlockQ5_0*>(src), dst, n_blocks);
    case DType::kQ5_1:
      return dequantize_q5_1(static_cast<const BlockQ5_1*>(src), dst, n_blocks);
    case DType::kQ5_K:
      return dequantize_q45_k<BlockQ5_K, q5k_quant>(static_cast<const BlockQ5_K*>(src), dst,
                                                    n_blocks);
    case DType::kQ3_K:
      return dequantize_sym16<BlockQ3_K, q3k_signed_scale, q3k_weight>(
          static_cast<const BlockQ3_K*>(src), dst, n_blocks);
    case DType::kQ2_K:
      return dequantize_q2_k(static_cast<const BlockQ2_K*>(src), dst, n_blocks);
    case DType::kIQ4_NL:
      return dequantize_iq4_nl(static_cast<const BlockIQ4_NL*>(src), dst, n_blocks);
    case DType::kIQ4_XS:
      return dequantize_iq4_xs(static_cast<const BlockIQ4_XS*>(src), dst, n_blocks);
    default:
      TALLY_CHECK(false, "dequantize_row: no conversion for {}", t.name);
  }
}

}  // namespace tally
