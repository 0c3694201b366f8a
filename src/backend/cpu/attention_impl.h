// The attention algorithm of attention.h, once, over a kernel set K that supplies the inner
// loops (scores, weighted_sum, scale, exp_inplace): scalar in attention.cpp, SIMD in
// attention_simd.h. scores reads K rows of a storage type EK, weighted_sum V rows of EV
// (KvF32, KvF16, KvBF16, KvQ8_0, KvQ4_0; KvQ8_0Short, KvQ4_0Short on the scalar path alone),
// widening or dequantizing as they load.
//
// Over a q8_0 / q4_0 K cache (attention_int8.h) the scores are int8 dots of the quantized query
// instead (K::scores_int8: exact integer sums, then the scales in a fixed order).
//
// Every path computes each score as one dot product (lanes of fma, then a fixed lane sum, then
// the tail in index order) and each output element as one fma chain over the positions in
// order; how a path groups heads and positions around that is its own affair (the SIMD path
// loads each K/V vector once for all the heads of a group), so it cannot change the bits.
// Internal linkage and builtins only, so ISA-specific instantiations cannot leak.
#pragma once

#include <cstdint>

#include <type_traits>

#include "backend/cpu/attention.h"
#include "backend/cpu/attention_int8.h"
#include "tensor/half.h"
#include "tensor/quant_blocks.h"

namespace tally::cpu {
namespace {

// K/V storage types. Each names a row of hd values of one head (Row, from the layer's base and
// the element offset of the row's first value), reads value i of it exactly widened to f32
// (at), and says which bytes the row occupies (addr, bytes: for the prefetches).
template <class T>
struct KvPlain {
  using Row = const T*;
  static Row row(const void* layer, int64_t elem) { return static_cast<const T*>(layer) + elem; }
  static const void* addr(Row r) { return r; }
  static int64_t bytes(Row, int64_t hd) { return hd * static_cast<int64_t>(sizeof(T)); }
};
struct KvF32 : KvPlain<float> {
  static float at(Row r, int64_t i) { return r[i]; }
};
struct KvF16 : KvPlain<uint16_t> {
  static float at(Row r, int64_t i) { return f16_to_f32(r[i]); }
};
struct KvBF16 : KvPlain<uint16_t> {
  static float at(Row r, int64_t i) { return bf16_to_f32(r[i]); }
};

// A head's row in blocks of 32: value i is element start + i of the blocks from `block` on.
// kv_types_check_shape keeps start + hd within whole blocks and start a multiple of hd.
template <class B>
struct KvBlockRow {
  const B* block;
  int64_t start;
};
// A blocked type T (below) gives each value's integer level; its value is level x its block's
// scale, as tensor/quantize.h dequantizes it. The f32 path reads at(), the int8 scores
// (attention_int8.h) level() and scale(): one definition of the split serves both.
template <class B, class T>
struct KvBlocked {
  using Block = B;
  using Row = KvBlockRow<B>;
  static Row row(const void* layer, int64_t elem) {  // elem >= 0: unsigned, a shift and a mask
    const auto e = static_cast<uint64_t>(elem);
    return {static_cast<const B*>(layer) + e / kQBlock, static_cast<int64_t>(e % kQBlock)};
  }
  static const void* addr(Row r) { return r.block; }
  static int64_t bytes(Row r, int64_t hd) {
    return (r.start + hd + kQBlock - 1) / kQBlock * static_cast<int64_t>(sizeof(B));
  }
  static uint16_t scale_f16(Row r, int64_t i) { return r.block[(r.start + i) / kQBlock].d; }
  static float scale(Row r, int64_t i) { return f16_to_f32(scale_f16(r, i)); }
  static float at(Row r, int64_t i) { return static_cast<float>(T::level(r, i)) * scale(r, i); }
};
// q8_0: qs[j].
struct KvQ8_0 : KvBlocked<BlockQ8_0, KvQ8_0> {
  static int level(Row r, int64_t i) {
    const int64_t j = r.start + i;
    return r.block[j / kQBlock].qs[j % kQBlock];
  }
};
// q4_0: q - 8, q the low nibble of qs[j] for j < 16, the high nibble of qs[j - 16] after.
struct KvQ4_0 : KvBlocked<BlockQ4_0, KvQ4_0> {
  static int level(Row r, int64_t i) {
    const int64_t j = r.start + i;
    const BlockQ4_0& b = r.block[j / kQBlock];
    const int64_t jj = j % kQBlock;
    return (jj < kQBlock / 2 ? (b.qs[jj] & 15) : (b.qs[jj - kQBlock / 2] >> 4)) - 8;
  }
};

// A head under 32 values of q8_0 / q4_0 is one short block of its own (tensor/kv_types.h,
// quant_blocks.h): the head at element offset elem is block elem / head_dim of the layer, so
// finding it takes head_dim. The scalar path alone reads such caches (attention.cpp), with
// this view in place of the layer's pointer for the storage types below.
struct KvShortBlockLayer {
  const uint8_t* base = nullptr;
  int64_t head_dim = 0;
  int64_t block_bytes = 0;  // of one head
};
template <class T>
struct KvShortBlocked {
  struct Row {
    const uint8_t* block;  // f16 d, then the levels
    int64_t n;             // values: the head_dim
  };
  static Row row(const void* layer, int64_t elem) {
    const auto* l = static_cast<const KvShortBlockLayer*>(layer);
    return {l->base + elem / l->head_dim * l->block_bytes, l->head_dim};
  }
  static const void* addr(Row r) { return r.block; }
  static int64_t bytes(Row r, int64_t /*hd*/) { return T::block_bytes(r.n); }
  static uint16_t scale_f16(Row r, int64_t) {
    uint16_t d;
    __builtin_memcpy(&d, r.block, sizeof d);  // unaligned in blocks of odd size
    return d;
  }
  static float scale(Row r, int64_t i) { return f16_to_f32(scale_f16(r, i)); }
  static float at(Row r, int64_t i) { return static_cast<float>(T::level(r, i)) * scale(r, i); }
};
struct KvQ8_0Short : KvShortBlocked<KvQ8_0Short> {
  static int64_t block_bytes(int64_t n) { return q8_0_block_bytes(n); }
  static int level(Row r, int64_t i) { return static_cast<int8_t>(r.block[sizeof(uint16_t) + i]); }
};
// Value i < n/2 in the low nibble of byte i, the rest in the high nibbles.
struct KvQ4_0Short : KvShortBlocked<KvQ4_0Short> {
  static int64_t block_bytes(int64_t n) { return q4_0_block_bytes(n); }
  static int level(Row r, int64_t i) {
    const uint8_t* qs = r.block + sizeof(uint16_t);
    return (i < r.n / 2 ? (qs[i] & 15) : (qs[i - r.n / 2] >> 4)) - 8;
  }
};
template <class E>
inline constexpr bool kKvShortBlocked = std::is_same_v<E, KvQ8_0Short> || std::is_same_v<E, KvQ4_0Short>;

// The blocked storage types; their K is scored with int8 dots (attention_int8.h).
template <class E>
inline constexpr bool kKvBlocked = std::is_same_v<E, KvQ8_0> || std::is_same_v<E, KvQ4_0>;
template <class E>
inline constexpr bool kKvInt8 = kKvBlocked<E> || kKvShortBlocked<E>;

// f.template operator()<E>() with E the storage type of `type` (a KV type: callers check);
// q8_0 / q4_0 as Q8 / Q4 (attention.cpp: the short-block types of heads under 32 values).
template <class Q8 = KvQ8_0, class Q4 = KvQ4_0, class F>
void with_kv_storage(DType type, F&& f) {
  switch (type) {
    case DType::kF16: return f.template operator()<KvF16>();
    case DType::kBF16: return f.template operator()<KvBF16>();
    case DType::kQ8_0: return f.template operator()<Q8>();
    case DType::kQ4_0: return f.template operator()<Q4>();
    default: return f.template operator()<KvF32>();
  }
}

// l[g] += s[g][p] for p < nc in order, the ng heads' chains side by side in registers (NG a
// constant: through memory each add would wait out a store-to-load forwarding as well).
template <int NG>
void attention_sum_weights_n(const float (*s)[kAttentionChunk], int64_t nc, float* l) {
  float sum[NG];
  for (int g = 0; g < NG; ++g) sum[g] = l[g];
  for (int64_t p = 0; p < nc; ++p)
    for (int g = 0; g < NG; ++g) sum[g] += s[g][p];
  for (int g = 0; g < NG; ++g) l[g] = sum[g];
}
inline void attention_sum_weights(const float (*s)[kAttentionChunk], int64_t ng, int64_t nc, float* l) {
  static_assert(kAttentionGroup == 8, "one case per group size below");
  switch (ng) {
    case 8: return attention_sum_weights_n<8>(s, nc, l);
    case 7: return attention_sum_weights_n<7>(s, nc, l);
    case 6: return attention_sum_weights_n<6>(s, nc, l);
    case 5: return attention_sum_weights_n<5>(s, nc, l);
    case 4: return attention_sum_weights_n<4>(s, nc, l);
    case 3: return attention_sum_weights_n<3>(s, nc, l);
    case 2: return attention_sum_weights_n<2>(s, nc, l);
    default: return attention_sum_weights_n<1>(s, nc, l);
  }
}

// Running softmax state of ng query heads: max m[g], sum l[g], unnormalized output in
// out[g] ([ng][head_dim]); s[g] ([ng][kAttentionChunk]) holds the chunk's scores and becomes
// its weights. Each head's sum is one chain over the positions in order; the heads' chains run
// side by side (one dependent add per position each would otherwise wait out its latency).
template <class K>
void attention_softmax_update(float (*s)[kAttentionChunk], int64_t ng, int64_t nc, float* m,
                              float* l, float* out, int64_t head_dim) {
  // Phase by phase over the heads rather than head by head: each phase's heads are
  // independent, so their latency chains (the max's lane tree, exp's polynomial) overlap.
  float chunk_max[kAttentionGroup];
  for (int64_t g = 0; g < ng; ++g) chunk_max[g] = K::max_of(s[g], nc);
  for (int64_t g = 0; g < ng; ++g) {
    if (chunk_max[g] > m[g]) {
      if (l[g] > 0.0f) {  // rescale what was summed under the old max
        const float alpha = __builtin_expf(m[g] - chunk_max[g]);
        K::scale(out + g * head_dim, alpha, head_dim);
        l[g] *= alpha;
      }
      m[g] = chunk_max[g];
    }
  }
  for (int64_t g = 0; g < ng; ++g)
    for (int64_t p = 0; p < nc; ++p) s[g][p] -= m[g];
  if (nc == kAttentionChunk) {  // a whole chunk: the heads' rows are one array
    K::exp_inplace(&s[0][0], ng * kAttentionChunk);
  } else {
    for (int64_t g = 0; g < ng; ++g) K::exp_inplace(s[g], nc);
  }
  attention_sum_weights(s, ng, nc, l);
}

// Asks for one K or V row ahead of its use. A head's rows sit one slot apart (n_kv_heads *
// head_dim values) in scattered blocks, so the hardware prefetchers do not see them coming:
// without this attention waits out one memory latency per position.
inline void prefetch_bytes(const void* p, int64_t n) {
  const char* bytes = static_cast<const char*>(p);
  for (int64_t b = 0; b < n; b += 64) __builtin_prefetch(bytes + b, 0, 3);
}
template <class E>
void prefetch_row(typename E::Row row, int64_t hd) {
  prefetch_bytes(E::addr(row), E::bytes(row, hd));
}

// How many positions ahead of the scores the K rows are asked for: enough rows in flight to
// cover a memory latency, few enough for the core's miss buffers.
inline constexpr int64_t kAttentionPrefetchAhead = 8;

// offset[p] = element offset in the layer of the row of positions c0 + p (p < nc) of KV head
// kvh (head_dim hd, slots of slot_stride values): its block from the table, then its slot.
// Walks the blocks instead of dividing per position (a division costs more than the rest).
inline void attention_chunk_offsets(BlockTableView table, int64_t bs, int64_t c0, int64_t nc,
                                    int64_t slot_stride, int64_t head_offset, int64_t* offset) {
  int64_t block = c0 / bs, in_block = c0 % bs;
  for (int64_t p = 0; p < nc; ++p) {
    offset[p] = (static_cast<int64_t>(table.ids[block]) * bs + in_block) * slot_stride + head_offset;
    if (++in_block == bs) {
      in_block = 0;
      ++block;
    }
  }
}

// What the scores are divided by: score_divisor, or sqrt(head_dim).
inline float attention_score_divisor(const AttentionArgs& a) {
  return a.score_divisor > 0.0f ? a.score_divisor : __builtin_sqrtf(static_cast<float>(a.head_dim));
}

// s[i] /= divisor for i < n. A power-of-two divisor (sqrt(64) = 8, sqrt(256) = 16) becomes a
// product with its reciprocal, which is exact: the same correctly rounded quotient, without
// a vector division's cost for every position (the compiler vectorizes either loop).
inline void attention_divide_scores(float* s, int64_t n, float divisor) {
  int exponent = 0;
  if (__builtin_frexpf(divisor, &exponent) == 0.5f) {
    const float reciprocal = 1.0f / divisor;
    for (int64_t i = 0; i < n; ++i) s[i] *= reciprocal;
  } else {
    for (int64_t i = 0; i < n; ++i) s[i] /= divisor;
  }
}

// The attention of query heads [g0, g0 + ng) of KV head kvh for token t, advanced a chunk at
// a time: attention_subgroup runs one over its context, attention_token_typed several KV
// heads' side by side. Either way each chunk's arithmetic is the same, so are the bits.
template <class K, class EK, class EV>
class AttentionRun {
 public:
  // prefetch_heads: whose K/V rows this run asks for ahead of use, on the int8 path: its
  // own (1), its and the next heads' of a slot, or none (another run asks for them).
  void begin(const AttentionArgs& a, int64_t t, int64_t kvh, int64_t g0, int64_t ng, int64_t prefetch_heads = 1) {
    a_ = &a;
    prefetch_heads_ = prefetch_heads;
    kvh_ = kvh;
    ng_ = ng;
    hd_ = a.head_dim;
    const int64_t n_rep = a.n_heads / a.n_kv_heads;
    n_ctx_ = static_cast<int64_t>(a.positions[t]) + 1;
    // Chunks start at the window's first position: a function of the position alone.
    first_ = a.window > 0 && n_ctx_ > a.window ? n_ctx_ - a.window : 0;
    table_ = a.block_tables[a.seq_index[t]];
    divisor_ = attention_score_divisor(a);
    q_ = a.q + (t * a.n_heads + kvh * n_rep + g0) * hd_;  // [ng][hd]
    out_ = a.out + (t * a.n_heads + kvh * n_rep + g0) * hd_;  // [ng][hd]
    // The int8 query, on the int8 path: quantized once per token and head, the divisor folded
    // into its scales (attention_int8.h), so its scores come out divided.
    int8_ = kKvInt8<EK> && attention_int8_scores(a);
    if (int8_) attention_quantize_query(q_, ng, hd_, divisor_, qq_);
    for (int64_t g = 0; g < ng; ++g) {
      m_[g] = -__builtin_inff();
      l_[g] = 0.0f;
      for (int64_t d = 0; d < hd_; ++d) out_[g * hd_ + d] = 0.0f;
    }
  }
  void set_prefetch_heads(int64_t n) { prefetch_heads_ = n; }
  int64_t first() const { return first_; }
  int64_t n_ctx() const { return n_ctx_; }

  // Positions [c0, c0 + kAttentionChunk) of the context (fewer at its end). head0: the
  // positions' row offsets of KV head h0 <= this run's, found once for several runs' heads
  // (attention_token_typed); null: found here.
  void chunk(int64_t c0, const int64_t* head0 = nullptr, int64_t h0 = 0) {
    const AttentionArgs& a = *a_;
    const int64_t hd = hd_, ng = ng_, n_ctx = n_ctx_;
    const void* k_layer = a.kv.k;
    const void* v_layer = a.kv.v;
    const int64_t nc = n_ctx - c0 < kAttentionChunk ? n_ctx - c0 : kAttentionChunk;
    if (head0 != nullptr) {
      for (int64_t p = 0; p < nc; ++p) offset_[p] = head0[p] + (kvh_ - h0) * hd;
    } else {
      attention_chunk_offsets(table_, a.kv.block_size, c0, nc, a.n_kv_heads * hd, kvh_ * hd, offset_);
    }
    if constexpr (kKvInt8<EK>) {
      if (int8_) K::template scores_int8<EK, EV>(qq_, ng, k_layer, v_layer, offset_, nc, hd, prefetch_heads_, &s_[0][0]);
    }
    if (!int8_) {
      constexpr int64_t kAhead = kAttentionPrefetchAhead;
      for (int64_t p = 0; p < nc && p < kAhead; ++p) prefetch_row<EK>(EK::row(k_layer, offset_[p]), hd);
      for (int64_t p = 0; p < nc; ++p) {
        if (p + kAhead < nc) prefetch_row<EK>(EK::row(k_layer, offset_[p + kAhead]), hd);
        // V is used after the chunk's scores: by then in cache.
        prefetch_row<EV>(EV::row(v_layer, offset_[p]), hd);
        float dots[kAttentionGroup];
        K::template scores<EK>(q_, ng, EK::row(k_layer, offset_[p]), hd, dots);
        for (int64_t g = 0; g < ng; ++g) s_[g][p] = dots[g];
      }
      for (int64_t g = 0; g < ng; ++g) attention_divide_scores(s_[g], nc, divisor_);
    }
    if (a.softcap > 0.0f)  // libm's tanhf on every ISA path: the same bits
      for (int64_t g = 0; g < ng; ++g)
        for (int64_t p = 0; p < nc; ++p) s_[g][p] = a.softcap * __builtin_tanhf(s_[g][p] / a.softcap);
    attention_softmax_update<K>(s_, ng, nc, m_, l_, out_, hd);
    K::template weighted_sum<EV>(out_, ng, &s_[0][0], kAttentionChunk, v_layer, offset_, nc, hd);
  }

  void end() {
    for (int64_t g = 0; g < ng_; ++g) K::scale(out_ + g * hd_, 1.0f / l_[g], hd_);
  }

 private:
  const AttentionArgs* a_ = nullptr;
  int64_t kvh_ = 0, ng_ = 0, hd_ = 0, n_ctx_ = 0, first_ = 0, prefetch_heads_ = 1;
  BlockTableView table_{};
  float divisor_ = 1.0f;
  const float* q_ = nullptr;
  float* out_ = nullptr;
  bool int8_ = false;
  QueryInt8 qq_;
  float m_[kAttentionGroup];
  float l_[kAttentionGroup];
  float s_[kAttentionGroup][kAttentionChunk];  // scores, then weights
  int64_t offset_[kAttentionChunk];  // of each position's K/V row in the layer
};

// Query heads [g0, g0 + ng) of KV head kvh for token t.
template <class K, class EK, class EV>
void attention_subgroup(const AttentionArgs& a, int64_t t, int64_t kvh, int64_t g0, int64_t ng) {
  AttentionRun<K, EK, EV> run;
  run.begin(a, t, kvh, g0, ng);
  for (int64_t c0 = run.first(); c0 < run.n_ctx(); c0 += kAttentionChunk) run.chunk(c0);
  run.end();
}

template <class K, class EK, class EV>
void attention_task_typed(const AttentionArgs& a, int64_t t, int64_t kvh) {
  const int64_t n_rep = a.n_heads / a.n_kv_heads;
  for (int64_t g0 = 0; g0 < n_rep; g0 += kAttentionGroup) {
    const int64_t ng = n_rep - g0 < kAttentionGroup ? n_rep - g0 : kAttentionGroup;
    attention_subgroup<K, EK, EV>(a, t, kvh, g0, ng);
  }
}

// Every KV head of token t, their chunks side by side (up to kAttentionTokenHeads heads at a
// time): a slot holds all the heads' rows of a position, so rows that share a cache line
// (q8_0's 68-byte rows do) find it in cache, and a slot's lines are read in order. Each head's
// bits are attention_task_typed's.
inline constexpr int64_t kAttentionTokenHeads = 8;
template <class K, class EK, class EV>
void attention_token_typed(const AttentionArgs& a, int64_t t) {
  const int64_t n_rep = a.n_heads / a.n_kv_heads;
  // Several subgroups a head, or K that is not int8-scored (attention() gives such K tiles
  // instead): one head at a time.
  if (!kKvInt8<EK> || n_rep > kAttentionGroup) {
    for (int64_t kvh = 0; kvh < a.n_kv_heads; ++kvh) attention_task_typed<K, EK, EV>(a, t, kvh);
    return;
  }
  if constexpr (kKvInt8<EK>) {
    AttentionRun<K, EK, EV> runs[kAttentionTokenHeads];
    for (int64_t h0 = 0; h0 < a.n_kv_heads; h0 += kAttentionTokenHeads) {
      const int64_t nh = a.n_kv_heads - h0 < kAttentionTokenHeads ? a.n_kv_heads - h0 : kAttentionTokenHeads;
      // The first head's run asks for the first chunk's rows of all nh heads (adjacent in
      // each slot); every later chunk's are asked for a chunk ahead, a share before each
      // head's turn, so they arrive while the heads work rather than as the first one starts.
      for (int64_t h = 0; h < nh; ++h) runs[h].begin(a, t, h0 + h, 0, n_rep, h == 0 ? nh : 0);
      // The rows of head h0 at each position of a chunk, found once for all nh heads.
      const int64_t hd = a.head_dim, bs = a.kv.block_size, slot = a.n_kv_heads * hd;
      const BlockTableView table = a.block_tables[a.seq_index[t]];
      const int64_t k_bytes = nh * EK::bytes(EK::row(a.kv.k, h0 * hd), hd);
      const int64_t v_bytes = nh * EV::bytes(EV::row(a.kv.v, h0 * hd), hd);
      const int64_t share = (kAttentionChunk + nh - 1) / nh;
      const int64_t n_ctx = runs[0].n_ctx();
      const auto chunk_size = [&](int64_t c) { return n_ctx - c < kAttentionChunk ? n_ctx - c : kAttentionChunk; };
      int64_t rows_a[kAttentionChunk], rows_b[kAttentionChunk];
      int64_t* cur = rows_a;
      int64_t* next = rows_b;
      const int64_t first = runs[0].first();
      attention_chunk_offsets(table, bs, first, chunk_size(first), slot, h0 * hd, cur);
      for (int64_t c0 = first; c0 < n_ctx; c0 += kAttentionChunk) {
        const int64_t c1 = c0 + kAttentionChunk;
        const int64_t n_next = c1 < n_ctx ? chunk_size(c1) : 0;
        if (n_next > 0) attention_chunk_offsets(table, bs, c1, n_next, slot, h0 * hd, next);
        for (int64_t h = 0; h < nh; ++h) {
          for (int64_t p = h * share; p < n_next && p < (h + 1) * share; ++p) {
            prefetch_bytes(EK::addr(EK::row(a.kv.k, next[p])), k_bytes);
            prefetch_bytes(EV::addr(EV::row(a.kv.v, next[p])), v_bytes);
          }
          runs[h].chunk(c0, cur, h0);
        }
        runs[0].set_prefetch_heads(0);
        int64_t* done = cur;
        cur = next;
        next = done;
      }
      for (int64_t h = 0; h < nh; ++h) runs[h].end();
    }
  }
}

// Dispatch on the storage types of K and V (checked by the callers).
template <class K>
void attention_task_impl(const AttentionArgs& a, int64_t t, int64_t kvh) {
  with_kv_storage(a.kv.k_dtype, [&]<class EK>() {
    with_kv_storage(a.kv.v_dtype, [&]<class EV>() { attention_task_typed<K, EK, EV>(a, t, kvh); });
  });
}
template <class K>
void attention_token_impl(const AttentionArgs& a, int64_t t) {
  with_kv_storage(a.kv.k_dtype, [&]<class EK>() {
    with_kv_storage(a.kv.v_dtype, [&]<class EV>() { attention_token_typed<K, EK, EV>(a, t); });
  });
}

}  // namespace
}  // namespace tally::cpu
