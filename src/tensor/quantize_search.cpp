// quantize_row_weighted: the error-minimising quantizers of `tally quantize` (quantize.h).
// Per block: weights from the importance (or the values themselves), a weighted scale search
// per sub-block (quantize_fit.h), then the sub-block scales quantized to the type's integer
// scales under an f16 super-block scale, each integer scale (and min) tried at its rounding
// and one step either side with the values re-rounded, keeping the least weighted error.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "tensor/quantize.h"
#include "tensor/quantize_fit.h"
#include "tensor/quantize_internal.h"

namespace tally {

namespace {

using detail::KQuantCodes;

float mean_square(const float* x, int n) {
  double s = 0.0;
  for (int i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return static_cast<float>(s / n);
}

int round_to(float v, int lo, int hi) { return detail::round_clamp(v, lo, hi); }

// Q2_K / Q4_K / Q5_K: sub-block j is d * sc_j * q - dmin * m_j, sc and m in 0..scale_max.
struct AffineShape {
  int n_sub, sub_len, q_hi, scale_max;
};

// The integer scales and mins of every sub-block under f16 super-block scales d and dmin (each
// tried at its rounding and one step either side, the values re-rounded), into c; returns the
// block's weighted error.
double affine_k_codes(const float* x, const float* w, const AffineShape& s, const detail::AffineFit* fit,
                      uint16_t d_bits, uint16_t dmin_bits, KQuantCodes& c) {
  c.d = d_bits;
  c.dmin = dmin_bits;
  const float d = f16_to_f32(d_bits), dmin = f16_to_f32(dmin_bits);
  double total = 0.0;
  for (int j = 0; j < s.n_sub; ++j) {
    const float* xj = x + j * s.sub_len;
    const float* wj = w + j * s.sub_len;
    const int sc0 = d > 0.0f ? round_to(fit[j].scale / d, 0, s.scale_max) : 0;
    const int m0 = dmin > 0.0f ? round_to(fit[j].offset / dmin, 0, s.scale_max) : 0;
    double best = INFINITY;
    for (int sc = std::max(0, sc0 - 1); sc <= std::min(s.scale_max, sc0 + 1); ++sc) {
      for (int m = std::max(0, m0 - 1); m <= std::min(s.scale_max, m0 + 1); ++m) {
        const float step = d * static_cast<float>(sc), off = dmin * static_cast<float>(m);
        const double err = detail::group_error(xj, wj, s.sub_len, step, off, 0, s.q_hi, nullptr);
        if (err < best) {
          best = err;
          c.sc[j] = sc;
          c.m[j] = m;
        }
      }
    }
    total += best;
  }
  return total;
}

KQuantCodes search_affine_k(const float* x, const float* w, const AffineShape& s) {
  detail::AffineFit fit[16];
  float max_scale = 0.0f, max_offset = 0.0f;
  for (int j = 0; j < s.n_sub; ++j) {
    fit[j] = detail::fit_affine_group(x + j * s.sub_len, w + j * s.sub_len, s.sub_len, s.q_hi, true);
    max_scale = std::max(max_scale, fit[j].scale);
    max_offset = std::max(max_offset, fit[j].offset);
  }
  // d is an f16 too: its rounding, and the f16 on the other side of max_scale / scale_max
  // (which matters most where d is near f16's underflow and one step of it is coarse).
  const auto scale_max = static_cast<float>(s.scale_max);
  const uint16_t d0 = f32_to_f16(max_scale / scale_max), dmin = f32_to_f16(max_offset / scale_max);
  const uint16_t d_other = f16_to_f32(d0) > max_scale / scale_max ? (d0 > 0 ? d0 - 1 : d0) : d0 + 1;
  KQuantCodes c, other;
  if (affine_k_codes(x, w, s, fit, d_other, dmin, other) < affine_k_codes(x, w, s, fit, d0, dmin, c)) c = other;
  const float d = f16_to_f32(c.d), dm = f16_to_f32(c.dmin);
  for (int j = 0; j < s.n_sub; ++j)
    detail::group_error(x + j * s.sub_len, w + j * s.sub_len, s.sub_len, d * static_cast<float>(c.sc[j]),
                        dm * static_cast<float>(c.m[j]), 0, s.q_hi, c.q + j * s.sub_len);
  return c;
}

// Q3_K / Q6_K: 16 sub-blocks of 16, d * sc_j * q with q in [q_lo, q_hi] and signed sc_j in
// [sc_lo, sc_hi]; the codes keep q - q_lo.
struct SymmetricShape {
  int q_lo, q_hi, sc_lo, sc_hi;
};

KQuantCodes search_symmetric_k(const float* x, const float* w, const SymmetricShape& s) {
  float scale[16];
  float extreme = 0.0f;
  for (int j = 0; j < 16; ++j) {
    scale[j] = detail::fit_symmetric_group(x + 16 * j, w + 16 * j, 16, s.q_lo, s.q_hi);
    if (std::fabs(scale[j]) > std::fabs(extreme)) extreme = scale[j];
  }
  KQuantCodes c;
  c.d = f32_to_f16(extreme / static_cast<float>(s.sc_lo));  // the extreme scale takes sc_lo
  const float d = f16_to_f32(c.d);
  for (int j = 0; j < 16; ++j) {
    const float* xj = x + 16 * j;
    const float* wj = w + 16 * j;
    const int sc0 = d != 0.0f ? round_to(scale[j] / d, s.sc_lo, s.sc_hi) : 0;
    double best = INFINITY;
    for (int sc = std::max(s.sc_lo, sc0 - 1); sc <= std::min(s.sc_hi, sc0 + 1); ++sc) {
      const double err = detail::group_error(xj, wj, 16, d * static_cast<float>(sc), 0.0f, s.q_lo, s.q_hi, nullptr);
      if (err < best) {
        best = err;
        c.sc[j] = sc;
      }
    }
    detail::group_error(xj, wj, 16, d * static_cast<float>(c.sc[j]), 0.0f, s.q_lo, s.q_hi, c.q + 16 * j);
  }
  return c;
}

void search_k_row(DType type, const float* src, void* dst, int64_t n_blocks, const float* importance) {
  const int64_t block_bytes = dtype_info(type).block_bytes;
  float w[kQKBlock];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQKBlock;
    detail::group_weights(x, importance ? importance + b * kQKBlock : nullptr, kQKBlock,
                          mean_square(x, kQKBlock), w);
    KQuantCodes c;
    switch (type) {
      case DType::kQ2_K: c = search_affine_k(x, w, {16, 16, 3, 15}); break;
      case DType::kQ4_K: c = search_affine_k(x, w, {8, 32, 15, 63}); break;
      case DType::kQ5_K: c = search_affine_k(x, w, {8, 32, 31, 63}); break;
      case DType::kQ3_K: c = search_symmetric_k(x, w, {-4, 3, -32, 31}); break;
      case DType::kQ6_K: c = search_symmetric_k(x, w, {-32, 31, -128, 127}); break;
      default: TALLY_CHECK(false, "search_k_row: {}", dtype_name(type));
    }
    detail::pack_k_block(type, c, static_cast<uint8_t*>(dst) + b * block_bytes);
  }
}

// 32 codes into 16 bytes: element i < 16 in the low nibble of byte i, i >= 16 in the high
// nibble of byte i - 16.
void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int i = 0; i < kQBlock / 2; ++i) qs[i] = static_cast<uint8_t>((q[i] & 15) | ((q[i + kQBlock / 2] & 15) << 4));
}

void search_iq4_nl(const float* src, BlockIQ4_NL* dst, int64_t n_blocks, const float* importance) {
  float w[kQBlock];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQBlock;
    detail::group_weights(x, importance ? importance + b * kQBlock : nullptr, kQBlock, mean_square(x, kQBlock), w);
    dst[b].d = f32_to_f16(detail::fit_iq4_group(x, w, kQBlock));
    uint8_t codes[kQBlock];
    detail::iq4_group_error(x, w, kQBlock, f16_to_f32(dst[b].d), codes);
    pack_nibbles(codes, dst[b].qs);
  }
}

// 8 sub-blocks of 32 with signed 6-bit scales s - 32 in -32..31 under an f16 d.
void search_iq4_xs(const float* src, BlockIQ4_XS* dst, int64_t n_blocks, const float* importance) {
  float w[kQKBlock];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQKBlock;
    detail::group_weights(x, importance ? importance + b * kQKBlock : nullptr, kQKBlock, mean_square(x, kQKBlock),
                          w);
    float scale[8];
    float extreme = 0.0f;
    for (int j = 0; j < 8; ++j) {
      scale[j] = detail::fit_iq4_group(x + 32 * j, w + 32 * j, 32);
      if (std::fabs(scale[j]) > std::fabs(extreme)) extreme = scale[j];
    }
    BlockIQ4_XS& out = dst[b];
    out = BlockIQ4_XS{};
    out.d = f32_to_f16(extreme / -32.0f);
    const float d = f16_to_f32(out.d);
    for (int j = 0; j < 8; ++j) {
      const int sc0 = d != 0.0f ? round_to(scale[j] / d, -32, 31) : 0;
      int best_sc = sc0;
      double best = INFINITY;
      for (int sc = std::max(-32, sc0 - 1); sc <= std::min(31, sc0 + 1); ++sc) {
        const double err = detail::iq4_group_error(x + 32 * j, w + 32 * j, 32, d * static_cast<float>(sc), nullptr);
        if (err < best) {
          best = err;
          best_sc = sc;
        }
      }
      uint8_t codes[32];
      detail::iq4_group_error(x + 32 * j, w + 32 * j, 32, d * static_cast<float>(best_sc), codes);
      const int s = best_sc + 32;
      out.scales_l[j / 2] = static_cast<uint8_t>(out.scales_l[j / 2] | ((s & 15) << (4 * (j % 2))));
      out.scales_h = static_cast<uint16_t>(out.scales_h | ((s >> 4) << (2 * j)));
      pack_nibbles(codes, out.qs + 16 * j);
    }
  }
}

// Q4_0 / Q5_0 with importance: d * (q - half), one f16 d per 32.
template <typename Block, int kHalf>
void search_symmetric_32(const float* src, Block* dst, int64_t n_blocks, const float* importance) {
  float w[kQBlock];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQBlock;
    detail::group_weights(x, importance + b * kQBlock, kQBlock, mean_square(x, kQBlock), w);
    dst[b].d = f32_to_f16(detail::fit_symmetric_group(x, w, kQBlock, -kHalf, kHalf - 1));
    uint8_t q[kQBlock];
    detail::group_error(x, w, kQBlock, f16_to_f32(dst[b].d), 0.0f, -kHalf, kHalf - 1, q);
    if constexpr (kHalf == 8) {
      pack_nibbles(q, dst[b].qs);
    } else {
      int qi[kQBlock];
      std::copy(q, q + kQBlock, qi);
      detail::pack_q5(qi, dst[b].qs, dst[b].qh);
    }
  }
}

// Q4_1 / Q5_1 with importance: d * q + m, f16 d and m.
template <typename Block, int kLevels>
void search_affine_32(const float* src, Block* dst, int64_t n_blocks, const float* importance) {
  float w[kQBlock];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQBlock;
    detail::group_weights(x, importance + b * kQBlock, kQBlock, mean_square(x, kQBlock), w);
    const detail::AffineFit f = detail::fit_affine_group(x, w, kQBlock, kLevels, false);
    dst[b].d = f32_to_f16(f.scale);
    dst[b].m = f32_to_f16(-f.offset);
    uint8_t q[kQBlock];
    detail::group_error(x, w, kQBlock, f16_to_f32(dst[b].d), -f16_to_f32(dst[b].m), 0, kLevels, q);
    if constexpr (kLevels == 15) {
      pack_nibbles(q, dst[b].qs);
    } else {
      int qi[kQBlock];
      std::copy(q, q + kQBlock, qi);
      detail::pack_q5(qi, dst[b].qs, dst[b].qh);
    }
  }
}

}  // namespace

void quantize_row_weighted(DType type, const float* src, void* dst, int64_t n, const float* importance) {
  const DTypeTraits& t = dtype_info(type);
  TALLY_CHECK(n >= 0 && n % t.block_size == 0, "quantize_row_weighted: {} elements of {} (block {})", n, t.name,
              t.block_size);
  const int64_t n_blocks = n / t.block_size;
  switch (type) {
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return search_k_row(type, src, dst, n_blocks, importance);
    case DType::kIQ4_NL:
      return search_iq4_nl(src, static_cast<BlockIQ4_NL*>(dst), n_blocks, importance);
    case DType::kIQ4_XS:
      return search_iq4_xs(src, static_cast<BlockIQ4_XS*>(dst), n_blocks, importance);
    case DType::kQ4_0:
      if (!importance) break;
      return search_symmetric_32<BlockQ4_0, 8>(src, static_cast<BlockQ4_0*>(dst), n_blocks, importance);
    case DType::kQ5_0:
      if (!importance) break;
      return search_symmetric_32<BlockQ5_0, 16>(src, static_cast<BlockQ5_0*>(dst), n_blocks, importance);
    case DType::kQ4_1:
      if (!importance) break;
      return search_affine_32<BlockQ4_1, 15>(src, static_cast<BlockQ4_1*>(dst), n_blocks, importance);
    case DType::kQ5_1:
      if (!importance) break;
      return search_affine_32<BlockQ5_1, 31>(src, static_cast<BlockQ5_1*>(dst), n_blocks, importance);
    default:
      break;
  }
  quantize_row(type, src, dst, n);  // ggml's reference rounding (byte-identical), f16, bf16, q8_0
}

}  // namespace tally
