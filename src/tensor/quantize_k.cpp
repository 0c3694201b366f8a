// Reference quantizers for the K-quant super-blocks (Q2_K..Q6_K). "Covering" quantizers: each
// sub-block's scale (and min) is the smallest integer level whose range holds all its values,
// so no value clamps and each is off by at most half a step. Scales are rounded up, never
// down, at both levels (the f16 super-block scale and the per-sub-block integer scale).
#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "tensor/quantize_internal.h"

namespace tally::detail {

namespace {

// Scales and mins of an asymmetric super-block (Q2_K, Q4_K, Q5_K): sub-block j's values are
// step_j * q - offset_j with q in 0..levels, step_j = d * sc[j], offset_j = dmin * m[j], sc and
// m in 0..scale_max.
struct ScaleMinFit {
  int n_sub;      // sub-blocks
  int sub_len;    // values per sub-block
  int levels;     // top quant level
  int scale_max;  // top integer scale / min
};

struct ScaleMin {
  uint16_t d = 0, dmin = 0;
  uint8_t sc[16] = {}, m[16] = {};
  float step[16] = {}, offset[16] = {};
};

ScaleMin fit_scale_min(const float* x, const ScaleMinFit& fit) {
  ScaleMin r;
  float need_min[16];  // -min(0, lowest value): what the offset must reach
  float highest[16];
  float max_need_min = 0.0f;
  for (int j = 0; j < fit.n_sub; ++j) {
    float lo = 0.0f, hi = -INFINITY;
    for (int i = 0; i < fit.sub_len; ++i) {
      lo = std::min(lo, x[j * fit.sub_len + i]);
      hi = std::max(hi, x[j * fit.sub_len + i]);
    }
    need_min[j] = -lo;
    highest[j] = hi;
    max_need_min = std::max(max_need_min, need_min[j]);
  }
  const auto scale_max = static_cast<float>(fit.scale_max);
  r.dmin = f16_round_up(max_need_min / scale_max);
  const float dmin = f16_to_f32(r.dmin);
  float need_step[16];
  float max_need_step = 0.0f;
  for (int j = 0; j < fit.n_sub; ++j) {
    r.m[j] = static_cast<uint8_t>(dmin > 0.0f ? ceil_clamp(need_min[j] / dmin, fit.scale_max) : 0);
    r.offset[j] = dmin * static_cast<float>(r.m[j]);
    need_step[j] = std::max(0.0f, (highest[j] + r.offset[j]) / static_cast<float>(fit.levels));
    max_need_step = std::max(max_need_step, need_step[j]);
  }
  r.d = f16_round_up(max_need_step / scale_max);
  const float d = f16_to_f32(r.d);
  for (int j = 0; j < fit.n_sub; ++j) {
    r.sc[j] = static_cast<uint8_t>(d > 0.0f ? ceil_clamp(need_step[j] / d, fit.scale_max) : 0);
    r.step[j] = d * static_cast<float>(r.sc[j]);
  }
  return r;
}

// Quant of element e under a ScaleMin fit of sub-blocks of sub_len.
int fit_quant(const ScaleMin& f, const float* x, int e, int sub_len, int levels) {
  const int j = e / sub_len;
  return f.step[j] > 0.0f ? round_clamp((x[e] + f.offset[j]) / f.step[j], 0, levels) : 0;
}

// Scales of a symmetric super-block (Q3_K, Q6_K) of 16 sub-blocks of 16: values are
// d * sc[j] * q with |q| <= q_max, sc in 0..scale_max; returns the steps d * sc[j].
struct SymmetricFit {
  uint16_t d = 0;
  int sc[16] = {};
  float step[16] = {};
};

SymmetricFit fit_symmetric(const float* x, int q_max, int scale_max) {
  SymmetricFit r;
  float need_step[16];
  float max_need_step = 0.0f;
  for (int j = 0; j < 16; ++j) {
    float amax = 0.0f;
    for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(x[j * 16 + i]));
    need_step[j] = amax / static_cast<float>(q_max);
    max_need_step = std::max(max_need_step, need_step[j]);
  }
  r.d = f16_round_up(max_need_step / static_cast<float>(scale_max));
  const float d = f16_to_f32(r.d);
  for (int j = 0; j < 16; ++j) {
    r.sc[j] = d > 0.0f ? ceil_clamp(need_step[j] / d, scale_max) : 0;
    r.step[j] = d * static_cast<float>(r.sc[j]);
  }
  return r;
}

int symmetric_quant(const SymmetricFit& f, float v, int e, int q_lo, int q_hi) {
  const float step = f.step[e / 16];
  return step > 0.0f ? round_clamp(v / step, q_lo, q_hi) : 0;
}

// The covering fits as KQuantCodes (quantize_internal.h), packed by pack_k_block.
KQuantCodes q45_k_codes(const float* x, int levels) {
  const ScaleMin f = fit_scale_min(x, {8, 32, levels, 63});
  KQuantCodes c;
  c.d = f.d;
  c.dmin = f.dmin;
  for (int j = 0; j < 8; ++j) {
    c.sc[j] = f.sc[j];
    c.m[j] = f.m[j];
  }
  for (int e = 0; e < kQKBlock; ++e) c.q[e] = static_cast<uint8_t>(fit_quant(f, x, e, 32, levels));
  return c;
}

// Q6_K / Q3_K: symmetric, d * sc[j] * (q - half) with sc >= 0; the level -half is left unused.
KQuantCodes symmetric_k_codes(const float* x, int half, int scale_max) {
  const SymmetricFit f = fit_symmetric(x, half - 1, scale_max);
  KQuantCodes c;
  c.d = f.d;
  for (int j = 0; j < 16; ++j) c.sc[j] = f.sc[j];
  for (int e = 0; e < kQKBlock; ++e)
    c.q[e] = static_cast<uint8_t>(symmetric_quant(f, x[e], e, -half, half - 1) + half);
  return c;
}

KQuantCodes q2_k_codes(const float* x) {
  const ScaleMin f = fit_scale_min(x, {16, 16, 3, 15});
  KQuantCodes c;
  c.d = f.d;
  c.dmin = f.dmin;
  for (int j = 0; j < 16; ++j) {
    c.sc[j] = f.sc[j];
    c.m[j] = f.m[j];
  }
  for (int e = 0; e < kQKBlock; ++e) c.q[e] = static_cast<uint8_t>(fit_quant(f, x, e, 16, 3));
  return c;
}

// Sets element e's 2-bit field in Q2_K / Q3_K's qs (the inverse of k_quant_2bits).
void put_2bits(uint8_t* qs, int e, int q) {
  uint8_t& byte = qs[(e / 128) * 32 + e % 32];
  byte = static_cast<uint8_t>(byte | ((q & 3) << (2 * ((e % 128) / 32))));
}

// Q4_K / Q5_K: the low 4 bits go to qs (nibble (e%64 >= 32) of byte (e/64)*32 + e%32); bit
// 4, if any, to qh.
template <typename Block>
void pack_q45_k(const KQuantCodes& c, Block* out, uint8_t* qh) {
  out->d = c.d;
  out->dmin = c.dmin;
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(c.sc[j]);
    m[j] = static_cast<uint8_t>(c.m[j]);
  }
  q4k_pack_scales(sc, m, out->scales);
  for (int e = 0; e < kQKBlock; ++e) {
    const int q = c.q[e];
    uint8_t& byte = out->qs[(e / 64) * 32 + e % 32];
    byte = static_cast<uint8_t>(e % 64 < 32 ? ((byte & 0xf0) | (q & 15))
                                            : ((byte & 0x0f) | ((q & 15) << 4)));
    if (qh) qh[e % 32] = static_cast<uint8_t>(qh[e % 32] | ((q >> 4) << (e / 32)));
  }
}

// Q6_K: values are d * scales[j] * (q - 32), scales int8.
void pack_q6_k(const KQuantCodes& c, BlockQ6_K* out) {
  out->d = c.d;
  for (int j = 0; j < 16; ++j) out->scales[j] = static_cast<int8_t>(c.sc[j]);
  for (int e = 0; e < 256; ++e) {
    const int q = c.q[e];
    // Inverse of q6k_quant's bit placement.
    const int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
    uint8_t& lo_byte = out->ql[half * 64 + (quarter & 1) * 32 + l];
    lo_byte = static_cast<uint8_t>(lo_byte | (quarter < 2 ? (q & 15) : ((q & 15) << 4)));
    out->qh[half * 32 + l] =
        static_cast<uint8_t>(out->qh[half * 32 + l] | ((q >> 4) << (2 * quarter)));
  }
}

// Q3_K: d * (s - 32) * (q - 4), sc = s - 32 in -32..31, q in 0..7.
void pack_q3_k(const KQuantCodes& c, BlockQ3_K* out) {
  out->d = c.d;
  uint8_t s[16];
  for (int j = 0; j < 16; ++j) s[j] = static_cast<uint8_t>(c.sc[j] + 32);
  q3k_pack_scales(s, out->scales);
  for (int e = 0; e < kQKBlock; ++e) {
    const int q = c.q[e];
    put_2bits(out->qs, e, q);
    out->hmask[e % 32] = static_cast<uint8_t>(out->hmask[e % 32] | ((q >> 2) << (e / 32)));
  }
}

void pack_q2_k(const KQuantCodes& c, BlockQ2_K* out) {
  out->d = c.d;
  out->dmin = c.dmin;
  for (int j = 0; j < 16; ++j) out->scales[j] = static_cast<uint8_t>(c.sc[j] | (c.m[j] << 4));
  for (int e = 0; e < kQKBlock; ++e) put_2bits(out->qs, e, c.q[e]);
}

}  // namespace

void pack_k_block(DType type, const KQuantCodes& c, void* block) {
  switch (type) {
    case DType::kQ2_K:
      *static_cast<BlockQ2_K*>(block) = BlockQ2_K{};
      return pack_q2_k(c, static_cast<BlockQ2_K*>(block));
    case DType::kQ3_K:
      *static_cast<BlockQ3_K*>(block) = BlockQ3_K{};
      return pack_q3_k(c, static_cast<BlockQ3_K*>(block));
    case DType::kQ4_K:
      *static_cast<BlockQ4_K*>(block) = BlockQ4_K{};
      return pack_q45_k(c, static_cast<BlockQ4_K*>(block), nullptr);
    case DType::kQ5_K: {
      auto* b = static_cast<BlockQ5_K*>(block);
      *b = BlockQ5_K{};
      return pack_q45_k(c, b, b->qh);
    }
    case DType::kQ6_K:
      *static_cast<BlockQ6_K*>(block) = BlockQ6_K{};
      return pack_q6_k(c, static_cast<BlockQ6_K*>(block));
    default:
      TALLY_CHECK(false, "pack_k_block: {} is not a K-quant", dtype_name(type));
  }
}

void quantize_q4_k(const float* src, BlockQ4_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) pack_k_block(DType::kQ4_K, q45_k_codes(src + b * kQKBlock, 15), &dst[b]);
}

void quantize_q5_k(const float* src, BlockQ5_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) pack_k_block(DType::kQ5_K, q45_k_codes(src + b * kQKBlock, 31), &dst[b]);
}

void quantize_q6_k(const float* src, BlockQ6_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b)
    pack_k_block(DType::kQ6_K, symmetric_k_codes(src + b * kQKBlock, 32, 127), &dst[b]);
}

void quantize_q3_k(const float* src, BlockQ3_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b)
    pack_k_block(DType::kQ3_K, symmetric_k_codes(src + b * kQKBlock, 4, 31), &dst[b]);
}

void quantize_q2_k(const float* src, BlockQ2_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) pack_k_block(DType::kQ2_K, q2_k_codes(src + b * kQKBlock), &dst[b]);
}

}  // namespace tally::detail
