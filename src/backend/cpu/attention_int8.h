// Q.K as int8 dot products over a quantized K cache (q8_0, q4_0), as llama.cpp's CPU flash
// attention does it: each query head is quantized once per token to int8 with one f32 scale
// per segment of min(head_dim, 32) values (the span of one K block within a head), and a
// score is the segments' exact integer dots, each times its two scales, summed in segment
// order, with the score divisor (sqrt(head_dim), or the model's) folded into the query's
// scales once per token (a division per segment instead of one per position):
//   x_s = float(sum_i q_s[i] * k_s[i]) * d_k(s)        (the integer sum is exact)
//   e_s = d_q(s) / divisor
//   score = x_0 * e_0;  score = fma(x_s, e_s, score) for s = 1, 2, ...
// Integer sums do not depend on the order of their terms, so every path (scalar, AVX2
// maddubs, AVX-512 VNNI) gives the same bits, and so does any grouping of positions.
// Heads whose length is not a multiple of 4 (or over kMaxHeadDim) keep the f32 path.
#pragma once

#include <cstdint>

#include "backend/cpu/attention.h"

namespace tally::cpu {

// One token's query heads of one KV head group, quantized for int8 dots against K.
struct QueryInt8 {
  static constexpr int64_t kMaxHeadDim = 256;
  static constexpr int64_t kMaxSegments = kMaxHeadDim / 32;
  int64_t seg = 0;    // values per segment: min(head_dim, 32)
  int64_t n_seg = 0;  // segments per head
  alignas(64) int8_t q[kAttentionGroup][kMaxHeadDim];  // [head][head_dim], in [-127, 127]
  float d[kAttentionGroup][kMaxSegments];               // scale of each segment
  float e[kAttentionGroup][kMaxSegments];               // d / the score divisor
  int32_t sum[kAttentionGroup][kMaxSegments];           // sum of each segment's q (bias terms)
};

// Whether attention over this cache scores with int8 dots (K q8_0 / q4_0, head_dim a
// multiple of 4 up to QueryInt8::kMaxHeadDim). Such K never takes the tiled kernel.
bool attention_int8_scores(const AttentionArgs& args);

// Quantizes heads [0, ng) of q ([ng][head_dim]): per segment d = max|x| / 127 and
// q = round-to-nearest-even(x / d) (0 where the segment is all zeros), e = d / divisor. One
// scalar home, so every ISA path gets the same int8 query.
void attention_quantize_query(const float* q, int64_t ng, int64_t head_dim, float divisor, QueryInt8& out);

}  // namespace tally::cpu
