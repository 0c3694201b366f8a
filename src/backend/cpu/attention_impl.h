// The attention algorithm of attention.h, once, over a kernel set K that supplies the inner
// loops (scores, weighted_sum, scale, exp_inplace): scalar in attention.cpp, SIMD in
// attention_simd.h. scores and weighted_sum read K/V rows of a storage type E (KvF32, KvF16,
// KvBF16), widening as they load.
//
// Every path computes each score as one dot product (lanes of fma, then a fixed lane sum, then
// the tail in index order) and each output element as one fma chain over the positions in
// order; how a path groups heads and positions around that is its own affair (the SIMD path
// loads each K/V vector once for all the heads of a group), so it cannot change the bits.
// Internal linkage and builtins only, so ISA-specific instantiations cannot leak.
#pragma once

#include <cstdint>

#include "backend/cpu/attention.h"
#include "tensor/half.h"

namespace tally::cpu {
namespace {

// K/V storage types: the stored element and its exact widening to f32.
struct KvF32 {
  using T = float;
  static float to_f32(float x) { return x; }
};
struct KvF16 {
  using T = uint16_t;
  static float to_f32(uint16_t h) { return f16_to_f32(h); }
};
struct KvBF16 {
  using T = uint16_t;
  static float to_f32(uint16_t b) { return bf16_to_f32(b); }
};

// Running softmax state of one query head: max m, sum l, unnormalized output in out.
template <class K>
void attention_softmax_update(float* s, int64_t nc, float& m, float& l, float* out,
                              int64_t head_dim) {
  float chunk_max = s[0];
  for (int64_t p = 1; p < nc; ++p) chunk_max = s[p] > chunk_max ? s[p] : chunk_max;
  if (chunk_max > m) {
    if (l > 0.0f) {  // rescale what was summed under the old max
      const float alpha = __builtin_expf(m - chunk_max);
      K::scale(out, alpha, head_dim);
      l *= alpha;
    }
    m = chunk_max;
  }
  for (int64_t p = 0; p < nc; ++p) s[p] -= m;
  K::exp_inplace(s, nc);
  for (int64_t p = 0; p < nc; ++p) l += s[p];
}

// Asks for one K or V row ahead of its use. A head's rows sit one slot apart (n_kv_heads *
// head_dim values) in scattered blocks, so the hardware prefetchers do not see them coming:
// without this attention waits out one memory latency per position.
template <class T>
void prefetch_row(const T* row, int64_t hd) {
  const char* bytes = reinterpret_cast<const char*>(row);
  for (int64_t b = 0; b < hd * static_cast<int64_t>(sizeof(T)); b += 64)
    __builtin_prefetch(bytes + b, 0, 3);
}

// How many positions ahead of the scores the K rows are asked for: enough rows in flight to
// cover a memory latency, few enough for the core's miss buffers.
inline constexpr int64_t kAttentionPrefetchAhead = 8;

// Query heads [g0, g0 + ng) of KV head kvh for token t.
template <class K, class E>
void attention_subgroup(const AttentionArgs& a, int64_t t, int64_t kvh, int64_t g0, int64_t ng) {
  using T = typename E::T;
  const int64_t hd = a.head_dim;
  const int64_t n_rep = a.n_heads / a.n_kv_heads;
  const int64_t n_ctx = static_cast<int64_t>(a.positions[t]) + 1;
  // Chunks start at the window's first position: a function of the position alone.
  const int64_t first = a.window > 0 && n_ctx > a.window ? n_ctx - a.window : 0;
  const BlockTableView table = a.block_tables[a.seq_index[t]];
  const int64_t bs = a.kv.block_size;
  const int64_t slot_stride = a.n_kv_heads * hd;
  const float divisor = a.score_divisor > 0.0f ? a.score_divisor : __builtin_sqrtf(static_cast<float>(hd));
  const float* q = a.q + (t * a.n_heads + kvh * n_rep + g0) * hd;  // [ng][hd]
  float* out = a.out + (t * a.n_heads + kvh * n_rep + g0) * hd;    // [ng][hd]
  const T* k_layer = static_cast<const T*>(a.kv.k);
  const T* v_layer = static_cast<const T*>(a.kv.v);

  float m[kAttentionGroup];
  float l[kAttentionGroup];
  float s[kAttentionGroup][kAttentionChunk];  // scores, then weights
  int64_t offset[kAttentionChunk];            // of each position's K/V row in the layer
  for (int64_t g = 0; g < ng; ++g) {
    m[g] = -__builtin_inff();
    l[g] = 0.0f;
    for (int64_t d = 0; d < hd; ++d) out[g * hd + d] = 0.0f;
  }
  for (int64_t c0 = first; c0 < n_ctx; c0 += kAttentionChunk) {
    const int64_t nc = n_ctx - c0 < kAttentionChunk ? n_ctx - c0 : kAttentionChunk;
    for (int64_t p = 0; p < nc; ++p) {
      const int64_t pos = c0 + p;
      const int64_t slot = static_cast<int64_t>(table.ids[pos / bs]) * bs + pos % bs;
      offset[p] = slot * slot_stride + kvh * hd;
    }
    constexpr int64_t kAhead = kAttentionPrefetchAhead;
    for (int64_t p = 0; p < nc && p < kAhead; ++p) prefetch_row(k_layer + offset[p], hd);
    for (int64_t p = 0; p < nc; ++p) {
      if (p + kAhead < nc) prefetch_row(k_layer + offset[p + kAhead], hd);
      prefetch_row(v_layer + offset[p], hd);  // used after the chunk's scores: by then in cache
      float dots[kAttentionGroup];
      K::template scores<E>(q, ng, k_layer + offset[p], hd, dots);
      for (int64_t g = 0; g < ng; ++g) s[g][p] = dots[g];
    }
    for (int64_t g = 0; g < ng; ++g)  // a separate pass: the compiler turns it into vector divides
      for (int64_t p = 0; p < nc; ++p) s[g][p] /= divisor;
    if (a.softcap > 0.0f)  // libm's tanhf on every ISA path: the same bits
      for (int64_t g = 0; g < ng; ++g)
        for (int64_t p = 0; p < nc; ++p) s[g][p] = a.softcap * __builtin_tanhf(s[g][p] / a.softcap);
    for (int64_t g = 0; g < ng; ++g)
      attention_softmax_update<K>(s[g], nc, m[g], l[g], out + g * hd, hd);
    K::template weighted_sum<E>(out, ng, &s[0][0], kAttentionChunk, v_layer, offset, nc, hd);
  }
  for (int64_t g = 0; g < ng; ++g) K::scale(out + g * hd, 1.0f / l[g], hd);
}

template <class K, class E>
void attention_task_typed(const AttentionArgs& a, int64_t t, int64_t kvh) {
  const int64_t n_rep = a.n_heads / a.n_kv_heads;
  for (int64_t g0 = 0; g0 < n_rep; g0 += kAttentionGroup) {
    const int64_t ng = n_rep - g0 < kAttentionGroup ? n_rep - g0 : kAttentionGroup;
    attention_subgroup<K, E>(a, t, kvh, g0, ng);
  }
}

// Dispatch on the storage type (checked by the callers: f32, f16 or bf16).
template <class K>
void attention_task_impl(const AttentionArgs& a, int64_t t, int64_t kvh) {
  switch (a.kv.dtype) {
    case DType::kF16:
      return attention_task_typed<K, KvF16>(a, t, kvh);
    case DType::kBF16:
      return attention_task_typed<K, KvBF16>(a, t, kvh);
    default:
      return attention_task_typed<K, KvF32>(a, t, kvh);
  }
}

}  // namespace
}  // namespace tally::cpu
