// Pieces shared by the quantizers (quantize.cpp, quantize_k.cpp); not a public interface.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tensor/dtype.h"
#include "tensor/half.h"
#include "tensor/quant_blocks.h"

namespace tally::detail {

// The smallest f16 >= v (v >= 0, finite): a scale rounded this way never shrinks the step,
// so the values it was chosen for still fit without clamping.
inline uint16_t f16_round_up(float v) {
  uint16_t h = f32_to_f16(v);
  if (f16_to_f32(h) < v && h < 0x7c00u) ++h;
  return h;
}

// The largest f16 <= v (finite): a minimum rounded this way never rises above the values.
inline uint16_t f16_round_down(float v) {
  if (v <= 0.0f) return static_cast<uint16_t>(f16_round_up(-v) | 0x8000u);
  uint16_t h = f32_to_f16(v);
  if (f16_to_f32(h) > v && h > 0) --h;
  return h;
}

// Q5_0 / Q5_1's quants q[32] (0..31): low 4 bits as Q4_0's nibbles, bit 4 of element i in
// bit i of qh.
inline void pack_q5(const int* q, uint8_t* qs, uint8_t* qh) {
  for (int i = 0; i < kQBlock / 2; ++i)
    qs[i] = static_cast<uint8_t>((q[i] & 15) | ((q[i + kQBlock / 2] & 15) << 4));
  for (int k = 0; k < 4; ++k) qh[k] = 0;
  for (int i = 0; i < kQBlock; ++i)
    qh[i / 8] = static_cast<uint8_t>(qh[i / 8] | ((q[i] >> 4) << (i % 8)));
}

// Nearest integer to v (ties to even), clamped to [lo, hi]; NaN maps to lo.
inline int round_clamp(float v, int lo, int hi) {
  const float r = std::nearbyint(v);
  if (!(r >= static_cast<float>(lo))) return lo;
  if (r > static_cast<float>(hi)) return hi;
  return static_cast<int>(r);
}

// Smallest integer >= v, clamped to [0, hi]; NaN maps to 0.
inline int ceil_clamp(float v, int hi) {
  const float c = std::ceil(v);
  if (!(c >= 0.0f)) return 0;
  if (c > static_cast<float>(hi)) return hi;
  return static_cast<int>(c);
}

// One K-quant super-block's integers before bit packing. q holds each value's stored level
// (q2_K 0..3, q3_K 0..7 for a factor q - 4, q4_K 0..15, q5_K 0..31, q6_K 0..63 for q - 32);
// sc / m the sub-block scales and mins as stored (q3_K: the signed s - 32 in -32..31, q6_K:
// the int8 scale; no mins), d / dmin f16.
struct KQuantCodes {
  uint16_t d = 0, dmin = 0;
  int sc[16] = {}, m[16] = {};
  uint8_t q[256] = {};
};

// Writes one block of `type` (Q2_K..Q6_K) from its codes: the one home of the bit layouts.
void pack_k_block(DType type, const KQuantCodes& codes, void* block);

void quantize_q4_k(const float* src, BlockQ4_K* dst, int64_t n_blocks);
void quantize_q6_k(const float* src, BlockQ6_K* dst, int64_t n_blocks);
void quantize_q5_k(const float* src, BlockQ5_K* dst, int64_t n_blocks);
void quantize_q3_k(const float* src, BlockQ3_K* dst, int64_t n_blocks);
void quantize_q2_k(const float* src, BlockQ2_K* dst, int64_t n_blocks);
void quantize_iq4_nl(const float* src, BlockIQ4_NL* dst, int64_t n_blocks);
void quantize_iq4_xs(const float* src, BlockIQ4_XS* dst, int64_t n_blocks);

}  // namespace tally::detail
