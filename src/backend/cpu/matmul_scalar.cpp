// Scalar kernels: portable, and the DEFINITION of the reduction order every ISA path follows
// (matmul_kernels.h). The SIMD files must reproduce these results bit for bit.
#include <vector>

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_repack.h"
#include "tensor/half.h"
#include "tensor/quant_blocks.h"

namespace tally::cpu::detail {

namespace {

struct LoadF32 {
  static float at(const uint8_t* row, int64_t k) { return reinterpret_cast<const float*>(row)[k]; }
};
struct LoadF16 {
  static float at(const uint8_t* row, int64_t k) {
    return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]);
  }
};
struct LoadBf16 {
  static float at(const uint8_t* row, int64_t k) {
    return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]);
  }
};

template <typename Load>
float dot_float(const uint8_t* row, const float* x, int64_t n) {
  float lanes[8] = {};
  const int64_t n8 = n & ~int64_t{7};
  for (int64_t k = 0; k < n8; ++k) lanes[k % 8] = fma_f32(Load::at(row, k), x[k], lanes[k % 8]);
  float s = lanes8_reduce(lanes);
  for (int64_t k = n8; k < n; ++k) s = fma_f32(Load::at(row, k), x[k], s);
  return s;
}

float dot_q8_0(const uint8_t* row, const MatmulActs& a, int64_t t, int64_t n) {
  const auto* blocks = reinterpret_cast<const BlockQ8_0*>(row);
  const int64_t nb = n / kQBlock;
  const int8_t* xq = a.q + t * n;
  const float* xd = a.d + t * nb;
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t dot = 0;
    for (int i = 0; i < kQBlock; ++i) dot += blocks[b].qs[i] * xq[b * kQBlock + i];
    const float c = f16_to_f32(blocks[b].d) * xd[b];
    acc = fma_f32(c, static_cast<float>(dot), acc);
  }
  return acc;
}

float dot_q4_0(const uint8_t* row, const MatmulActs& a, int64_t t, int64_t n) {
  const auto* blocks = reinterpret_cast<const BlockQ4_0*>(row);
  const int64_t nb = n / kQBlock;
  const int8_t* xq = a.q + t * n;
  const float* xd = a.d + t * nb;
  const int16_t* xs = a.sums + t * nb;
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* x = xq + b * kQBlock;
    int32_t dot = 0;
    for (int i = 0; i < kQBlock / 2; ++i)
      dot += (blocks[b].qs[i] & 15) * x[i] + (blocks[b].qs[i] >> 4) * x[i + kQBlock / 2];
    dot -= 8 * xs[b];  // the weights are q - 8
    const float c = f16_to_f32(blocks[b].d) * xd[b];
    acc = fma_f32(c, static_cast<float>(dot), acc);
  }
  return acc;
}

// Q4_K and Q5_K: Quant(block, i) is element i's 4- or 5-bit quant.
template <typename Block, int (*Quant)(const Block&, int)>
float dot_q45_k(const uint8_t* row, const MatmulActs& a, int64_t t, int64_t n) {
  const auto* blocks = reinterpret_cast<const Block*>(row);
  const int64_t nb = n / kQKBlock;
  const int8_t* xq = a.q + t * n;
  const float* xd = a.d + t * nb;
  const int16_t* xs = a.sums + t * (n / kActSumGroup);
  float lanes[8] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const Block& blk = blocks[b];
    const int8_t* x = xq + b * kQKBlock;
    const int16_t* sums = xs + b * (kQKBlock / kActSumGroup);
    int32_t dot = 0, min_dot = 0;
    for (int j = 0; j < 8; ++j) {
      int sc = 0, m = 0;
      q4k_scale_min(blk.scales, j, &sc, &m);
      int32_t sub = 0;
      for (int i = j * 32; i < j * 32 + 32; ++i) sub += Quant(blk, i) * x[i];
      dot += sc * sub;
      min_dot += m * (sums[2 * j] + sums[2 * j + 1]);
    }
    lanes[b % 8] =
        q4k_lane_update(lanes[b % 8], f16_to_f32(blk.d), f16_to_f32(blk.dmin), xd[b], dot, min_dot);
  }
  return lanes8_reduce(lanes);
}

// Q6_K and Q3_K: 16 sub-blocks of 16 with signed scales Scale(block, j) and unsigned quants
// Quant(block, i); the weights are quant - kOffset.
template <typename Block, int (*Scale)(const Block&, int), int (*Quant)(const Block&, int),
          int kOffset>
float dot_sym16(const uint8_t* row, const MatmulActs& a, int64_t t, int64_t n) {
  const auto* blocks = reinterpret_cast<const Block*>(row);
  const int64_t nb = n / kQKBlock;
  const int8_t* xq = a.q + t * n;
  const float* xd = a.d + t * nb;
  const int16_t* xs = a.sums + t * (n / kActSumGroup);
  float lanes[8] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const Block& blk = blocks[b];
    const int8_t* x = xq + b * kQKBlock;
    const int16_t* sums = xs + b * (kQKBlock / kActSumGroup);
    int32_t dot = 0;
    for (int j = 0; j < 16; ++j) {
      int32_t sub = 0;
      for (int i = j * 16; i < j * 16 + 16; ++i) sub += Quant(blk, i) * x[i];
      dot += Scale(blk, j) * (sub - kOffset * sums[j]);
    }
    const float c = f16_to_f32(blk.d) * xd[b];
    lanes[b % 8] = fma_f32(c, static_cast<float>(dot), lanes[b % 8]);
  }
  return lanes8_reduce(lanes);
}


// Q4_1 / Q5_0 / Q5_1 / IQ4_NL: Quant(block, i) is element i's integer weight before the
// offset; Q5_0's weights are q - 16 (kOffset), Q4_1 / Q5_1's d * q + m, IQ4_NL's d * q.
template <typename Block, int (*Quant)(const Block&, int), bool kHasMin, int kOffset = 0>
float dot_block32(const uint8_t* row, const MatmulActs& a, int64_t t, int64_t n) {
  const auto* blocks = reinterpret_cast<const Block*>(row);
  const int64_t nb = n / kQBlock;
  const int8_t* xq = a.q + t * n;
  const float* xd = a.d + t * nb;
  const int16_t* xs = a.sums + t * nb;
  float lanes[8] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* x = xq + b * kQBlock;
    int32_t dot = 0;
    for (int i = 0; i < kQBlock; ++i) dot += Quant(blocks[b], i) * x[i];
    float w_m = 0.0f;
    if constexpr (kHasMin) w_m = f16_to_f32(blocks[b].m);
    dot -= kOffset * xs[b];
    lanes[b % 8] = block32_lane_update<kHasMin>(lanes[b % 8], f16_to_f32(blocks[b].d), w_m, xd[b],
                                                dot, xs[b]);
  }
  return lanes8_reduce(lanes);
}

int quant_q4_1(const BlockQ4_1& b, int i) { return q32_nibble(b.qs, i); }
int quant_q5_0(const BlockQ5_0& b, int i) { return q32_nibble(b.qs, i) | q5_high(b.qh, i); }
int quant_q5_1(const BlockQ5_1& b, int i) { return q32_nibble(b.qs, i) | q5_high(b.qh, i); }
int quant_iq4_nl(const BlockIQ4_NL& b, int i) { return kIq4Values[q32_nibble(b.qs, i)]; }

float dot_iq4_xs(const uint8_t* row, const MatmulActs& a, int64_t t, int64_t n) {
  const auto* blocks = reinterpret_cast<const BlockIQ4_XS*>(row);
  const int64_t nb = n / kQKBlock;
  const int8_t* xq = a.q + t * n;
  const float* xd = a.d + t * nb;
  float lanes[8] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const BlockIQ4_XS& blk = blocks[b];
    const int8_t* x = xq + b * kQKBlock;
    int32_t dot = 0;
    for (int j = 0; j < 8; ++j) {
      int32_t sub = 0;
      for (int i = 0; i < 32; ++i)
        sub += kIq4Values[q32_nibble(blk.qs + 16 * j, i)] * x[32 * j + i];
      dot += (iq4xs_scale(blk, j) - 32) * sub;
    }
    const float c = f16_to_f32(blk.d) * xd[b];
    lanes[b % 8] = fma_f32(c, static_cast<float>(dot), lanes[b % 8]);
  }
  return lanes8_reduce(lanes);
}

float dot_q2_k(const uint8_t* row, const MatmulActs& a, int64_t t, int64_t n) {
  const auto* blocks = reinterpret_cast<const BlockQ2_K*>(row);
  const int64_t nb = n / kQKBlock;
  const int8_t* xq = a.q + t * n;
  const float* xd = a.d + t * nb;
  const int16_t* xs = a.sums + t * (n / kActSumGroup);
  float lanes[8] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ2_K& blk = blocks[b];
    const int8_t* x = xq + b * kQKBlock;
    const int16_t* sums = xs + b * (kQKBlock / kActSumGroup);
    int32_t dot = 0, min_dot = 0;
    for (int j = 0; j < 16; ++j) {
      int32_t sub = 0;
      for (int i = j * 16; i < j * 16 + 16; ++i) sub += k_quant_2bits(blk.qs, i) * x[i];
      dot += (blk.scales[j] & 15) * sub;
      min_dot += (blk.scales[j] >> 4) * sums[j];
    }
    lanes[b % 8] =
        q4k_lane_update(lanes[b % 8], f16_to_f32(blk.d), f16_to_f32(blk.dmin), xd[b], dot, min_dot);
  }
  return lanes8_reduce(lanes);
}

template <typename Load>
void tile_float(const MatmulTile& tile) {
  const WeightMatrix& w = *tile.w;
  for (int64_t o = tile.row_begin; o < tile.row_end; ++o)
    for (int64_t t = 0; t < tile.acts->n_tokens; ++t)
      tile.y[t * w.n_out + o] =
          dot_float<Load>(w.data + o * w.row_bytes, tile.acts->x + t * w.n_in, w.n_in);
}

template <float (*Dot)(const uint8_t*, const MatmulActs&, int64_t, int64_t)>
void tile_quant(const MatmulTile& tile) {
  const WeightMatrix& w = *tile.w;
  // Interleaved rows are read back in row form first (into scratch that only grows).
  thread_local std::vector<uint8_t> row_buf;
  const bool interleaved = w.layout == WeightLayout::kInterleaved8;
  if (interleaved && static_cast<int64_t>(row_buf.size()) < w.row_bytes)
    row_buf.resize(w.row_bytes);
  for (int64_t o = tile.row_begin; o < tile.row_end; ++o) {
    const uint8_t* row = w.data + o * w.row_bytes;
    if (interleaved) {
      interleaved_row(w, o, row_buf.data());
      row = row_buf.data();
    }
    for (int64_t t = 0; t < tile.acts->n_tokens; ++t)
      tile.y[t * w.n_out + o] = Dot(row, *tile.acts, t, w.n_in);
  }
}

}  // namespace

const MatmulKernels& matmul_kernels_scalar() {
  static const MatmulKernels k = {
      "scalar",
      tile_float<LoadF32>,
      tile_float<LoadF16>,
      tile_float<LoadBf16>,
      tile_quant<dot_q8_0>,
      tile_quant<dot_q4_0>,
      tile_quant<dot_q45_k<BlockQ4_K, q4k_quant>>,
      tile_quant<dot_sym16<BlockQ6_K, q6k_signed_scale, q6k_quant, 32>>,
      tile_quant<dot_block32<BlockQ4_1, quant_q4_1, true>>,
      tile_quant<dot_block32<BlockQ5_0, quant_q5_0, false, 16>>,
      tile_quant<dot_block32<BlockQ5_1, quant_q5_1, true>>,
      tile_quant<dot_q2_k>,
      tile_quant<dot_sym16<BlockQ3_K, q3k_signed_scale, q3k_quant, 4>>,
      tile_quant<dot_q45_k<BlockQ5_K, q5k_quant>>,
      tile_quant<dot_block32<BlockIQ4_NL, quant_iq4_nl, false>>,
      tile_quant<dot_iq4_xs>,
      act_quantize_row32,
      act_quantize_row_k,
  };
  return k;
}

}  // namespace tally::cpu::detail
