// Reference quantizers for the K-quant super-blocks (Q4_K, Q6_K). "Covering" quantizers: each
// sub-block's scale (and min) is the smallest 6/8-bit level whose range holds all its values,
// so no value clamps and each is off by at most half a step. Scales are rounded up, never
// down, at both levels (the f16 super-block scale and the per-sub-block integer scale).
#include <algorithm>
#include <cmath>

#include "tensor/quantize_internal.h"

namespace tally::detail {

namespace {

// One Q4_K super-block: values are step_j * q - offset_j, q in 0..15, offset_j >= 0.
void quantize_q4_k_block(const float* x, BlockQ4_K* out) {
  float need_min[8];  // -min(0, lowest value): what the offset must reach
  float highest[8];
  float max_need_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    float lo = 0.0f, hi = -INFINITY;
    for (int i = 0; i < 32; ++i) {
      lo = std::min(lo, x[j * 32 + i]);
      hi = std::max(hi, x[j * 32 + i]);
    }
    need_min[j] = -lo;
    highest[j] = hi;
    max_need_min = std::max(max_need_min, need_min[j]);
  }
  out->dmin = f16_round_up(max_need_min / 63.0f);
  const float dmin = f16_to_f32(out->dmin);
  uint8_t m[8], sc[8];
  float offset[8], need_step[8];
  float max_need_step = 0.0f;
  for (int j = 0; j < 8; ++j) {
    m[j] = static_cast<uint8_t>(dmin > 0.0f ? ceil_clamp(need_min[j] / dmin, 63) : 0);
    offset[j] = dmin * static_cast<float>(m[j]);
    need_step[j] = std::max(0.0f, (highest[j] + offset[j]) / 15.0f);
    max_need_step = std::max(max_need_step, need_step[j]);
  }
  out->d = f16_round_up(max_need_step / 63.0f);
  const float d = f16_to_f32(out->d);
  for (int j = 0; j < 8; ++j)
    sc[j] = static_cast<uint8_t>(d > 0.0f ? ceil_clamp(need_step[j] / d, 63) : 0);
  q4k_pack_scales(sc, m, out->scales);
  for (int j = 0; j < 8; ++j) {
    const float step = d * static_cast<float>(sc[j]);
    for (int i = 0; i < 32; ++i) {
      const int e = j * 32 + i;  // element; nibble (e%64 >= 32) of byte (e/64)*32 + e%32
      const int q = step > 0.0f ? round_clamp((x[e] + offset[j]) / step, 0, 15) : 0;
      uint8_t& byte = out->qs[(e / 64) * 32 + e % 32];
      byte = static_cast<uint8_t>(e % 64 < 32 ? ((byte & 0xf0) | q) : ((byte & 0x0f) | (q << 4)));
    }
  }
}

// One Q6_K super-block: symmetric, values are d * scales[j] * (q - 32) with scales[j] >= 0.
void quantize_q6_k_block(const float* x, BlockQ6_K* out) {
  float need_step[16];
  float max_need_step = 0.0f;
  for (int j = 0; j < 16; ++j) {
    float amax = 0.0f;
    for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(x[j * 16 + i]));
    need_step[j] = amax / 31.0f;
    max_need_step = std::max(max_need_step, need_step[j]);
  }
  out->d = f16_round_up(max_need_step / 127.0f);
  const float d = f16_to_f32(out->d);
  for (int j = 0; j < 16; ++j)
    out->scales[j] = static_cast<int8_t>(d > 0.0f ? ceil_clamp(need_step[j] / d, 127) : 0);
  std::fill(out->ql, out->ql + sizeof(out->ql), 0);
  std::fill(out->qh, out->qh + sizeof(out->qh), 0);
  for (int e = 0; e < 256; ++e) {
    const float step = d * static_cast<float>(out->scales[e / 16]);
    const int q = (step > 0.0f ? round_clamp(x[e] / step, -32, 31) : 0) + 32;
    // Inverse of q6k_quant's bit placement.
    const int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
    uint8_t& lo_byte = out->ql[half * 64 + (quarter & 1) * 32 + l];
    lo_byte = static_cast<uint8_t>(lo_byte | (quarter < 2 ? (q & 15) : ((q & 15) << 4)));
    out->qh[half * 32 + l] =
        static_cast<uint8_t>(out->qh[half * 32 + l] | ((q >> 4) << (2 * quarter)));
  }
}

}  // namespace

void quantize_q4_k(const float* src, BlockQ4_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    dst[b] = BlockQ4_K{};
    quantize_q4_k_block(src + b * kQKBlock, &dst[b]);
  }
}

void quantize_q6_k(const float* src, BlockQ6_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) quantize_q6_k_block(src + b * kQKBlock, &dst[b]);
}

}  // namespace tally::detail
