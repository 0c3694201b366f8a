// Attention for a tile of query tokens of one sequence (prefill, chunked prefill), with the
// per-token path's bits (attention_impl.h).
//
// A tile fills the S::kWidth lanes of a vector with (token, query head) pairs of one KV head
// group: 2 tokens x 8 heads on AVX-512 for a GQA group of 8, 1 x 8 on AVX2, more tokens for
// smaller groups. Each K/V vector is then loaded (and widened) once for every pair, the
// pairs' dot products are reduced together (S::hsum_lanes: the same additions as S::hsum,
// 15 instead of 64 on AVX-512), and the softmax steps that were scalar loops per head (the
// chunk's max, the running sum) run on one vector of pairs per position.
//
// Every float operation of a (token, head) is the per-token path's, in its order: scores
// with the same fma lanes and lane tree, the same division and soft-cap, the chunk's max by
// the same comparison, the same libm exp for the rescale, the running sum and each output
// element as the same chains over the positions in order. Tokens whose context ends inside a
// chunk see the positions past their end as -inf scores and zero weights, which leave the max,
// the sum (l + 0 == l) and the outputs (no fma is issued for them) unchanged. So a token's
// result does not depend on the tile it lands in; tests/ops/attention checks it bit for bit.
// Include only from attention_avx2.cpp / attention_avx512.cpp, after the primitive header.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backend/cpu/attention_simd.h"

namespace tally::cpu {
namespace {

template <class S>
struct AttentionTile {
  static constexpr int kW = S::kWidth;
  using V = typename S::V;
  using Kern = SimdKernels<S>;
  // The widest head with_dims_per_lane takes, in floats.
  static constexpr int64_t kMaxScoreDims = 16 * kW;

  // The (token, head) pair of each lane. Lanes from n_used on are idle: they compute on lane
  // 0's query and their results are never read.
  struct Lanes {
    const float* q[kW];
    float* out[kW];
    int64_t n_ctx[kW];  // positions the lane attends (0 for idle lanes)
    int n_used;
  };

  struct Chunk {
    int64_t c0, nc;  // first position, positions in the chunk (the longest lane's)
    int64_t full;    // rows [0, full) are valid for every used lane
  };

  // s[p][lane] = q_lane . k_p / divisor (soft-capped), as scores_n computes each. qt: the
  // lanes' queries transposed (null where score_rows does not apply).
  template <class EK, class EV>
  static void scores(const AttentionArgs& a, const Lanes& ln, const Chunk& c, const int64_t* offset,
                     const float* qt, float* s) {
    const int64_t hd = a.head_dim;
    constexpr int64_t kAhead = kAttentionPrefetchAhead;
    for (int64_t p = 0; p < c.nc && p < kAhead; ++p) prefetch_row<EK>(EK::row(a.kv.k, offset[p]), hd);
    if (ln.n_used <= kW / 2) {
      scores_pairs<EK, EV>(a, ln, c, offset, s);
    } else if (qt != nullptr) {
      with_dims_per_lane(hd / kW, [&]<int M>() {
        for (int64_t p0 = 0; p0 < c.nc; p0 += kScoreRows) {
          const int64_t nb = c.nc - p0 < kScoreRows ? c.nc - p0 : kScoreRows;
          for (int64_t p = p0 + kAhead; p < p0 + kAhead + nb && p < c.nc; ++p)
            prefetch_row<EK>(EK::row(a.kv.k, offset[p]), hd);
          for (int64_t p = p0; p < p0 + nb; ++p) prefetch_row<EV>(EV::row(a.kv.v, offset[p]), hd);
          score_rows<EK, M>(a.kv.k, offset + p0, nb, qt, s + p0 * kW);
        }
      });
    } else {
      for (int64_t p = 0; p < c.nc; ++p) {
        if (p + kAhead < c.nc) prefetch_row<EK>(EK::row(a.kv.k, offset[p + kAhead]), hd);
        prefetch_row<EV>(EV::row(a.kv.v, offset[p]), hd);
        const typename EK::Row k = EK::row(a.kv.k, offset[p]);
        V acc[kW];
        for (int L = 0; L < kW; ++L) acc[L] = S::zero();
        for (int64_t i = 0; i < hd; i += kW) {
          const V kv = Kern::template load_kv<EK>(k, i);
#pragma GCC unroll 16
          for (int L = 0; L < kW; ++L) acc[L] = S::fmadd(S::load(ln.q[L] + i), kv, acc[L]);
        }
        S::store(s + p * kW, S::hsum_lanes(acc));
      }
    }
    attention_divide_scores(s, c.nc * kW, attention_score_divisor(a));
    if (a.softcap > 0.0f)
      for (int64_t e = 0; e < c.nc * kW; ++e) s[e] = a.softcap * __builtin_tanhf(s[e] / a.softcap);
  }

  // Positions per score_rows call: its K rows widened, and the partial sums of kW / lanes
  // passes, stay in L1.
  static constexpr int64_t kScoreRows = 8;
  // Vector registers score_rows may hold queries and chains in (of 32 zmm). Not on AVX2:
  // without an fma that broadcasts from memory, and with 16 registers, the broadcasts cost
  // more than the shuffles they save (measured: the 2048-token kernel 1.2-1.4x slower).
  static constexpr int kScoreRegs = kW == 16 ? 24 : 0;
  // How many lanes of the per-token dot one pass of score_rows takes, for head_dim = M * kW:
  // the most (a power of two) whose M query vectors each, and two chains each, fit kScoreRegs.
  static constexpr int score_lanes_per_pass(int m) {
    int g = kW;
    while (g > 1 && g * (m + 2) > kScoreRegs) g /= 2;
    return g;
  }
  // f.template operator()<M>() for head_dim = m * kW where score_rows has registers for it;
  // false (and no call) elsewhere.
  template <class F>
  static bool with_dims_per_lane(int64_t m, F&& f) {
    switch (m) {
      case 1: return call_if_fits<1>(f);
      case 2: return call_if_fits<2>(f);
      case 4: return call_if_fits<4>(f);
      case 6: return call_if_fits<6>(f);
      case 8: return call_if_fits<8>(f);
      case 16: return call_if_fits<16>(f);
      default: return false;
    }
  }
  template <int M, class F>
  static bool call_if_fits(F& f) {
    if constexpr (M + 2 <= kScoreRegs) {
      f.template operator()<M>();
      return true;
    } else {
      return false;
    }
  }

  // x[0] = the halving tree of x[0..n) (n a power of two): x[j] + x[j + n/2], then again on
  // the lower half, ...: S::hsum's order over the lanes of one vector.
  static void halving_tree(V* x, int n) {
    for (int w = n / 2; w >= 1; w /= 2)
      for (int j = 0; j < w; ++j) x[j] = S::add(x[j], x[j + w]);
  }

  // s[b][lane] = q_lane . k_b for the nb (<= kScoreRows) K rows at offset[b], head_dim M * kW,
  // qt[d][lane] the lanes' queries transposed. The per-token kernel's arithmetic (scores_n)
  // with the roles turned: there lane j of a query's vectors is an fma chain over the dims j,
  // j + kW, ... and S::hsum then folds the kW lanes by a halving tree; here chain j of all
  // the tile's lanes at once is one vector of fmas (the query dims from qt, K's value
  // broadcast), and the tree adds whole vectors: the same products, sums and order for every
  // lane, and no shuffles. A pass takes kG of the chains (j = g, g + kW / kG, ...: the tree's
  // first levels pair them) with their queries in registers, for every row of the block.
  template <class EK, int M>
  static void score_rows(const void* k_layer, const int64_t* offset, int64_t nb, const float* qt, float* s) {
    constexpr int64_t hd = int64_t{M} * kW;
    constexpr int kG = score_lanes_per_pass(M);
    constexpr int kPasses = kW / kG;
    alignas(64) float wide[kScoreRows][hd];  // K rows widened to f32
    const float* k[kScoreRows];  // kScoreRows is even
    for (int64_t b = 0; b < nb; ++b) {
      const typename EK::Row row = EK::row(k_layer, offset[b]);
      if constexpr (std::is_same_v<EK, KvF32>) {
        k[b] = row;
      } else {
        for (int64_t i = 0; i < hd; i += kW) S::store(wide[b] + i, Kern::template load_kv<EK>(row, i));
        k[b] = wide[b];
      }
    }
    if (nb % 2 != 0) k[nb] = k[nb - 1];  // rows go in pairs: an odd block's last is repeated
    V part[kPasses][kScoreRows];
#pragma GCC unroll 16
    for (int g = 0; g < kPasses; ++g) {
      V qv[kG][M];
      for (int t = 0; t < kG; ++t)
        for (int m = 0; m < M; ++m) qv[t][m] = S::load(qt + (g + kPasses * t + kW * m) * kW);
      // Two rows at a time: twice the independent fma chains to cover their latency.
      for (int64_t b = 0; b < nb; b += 2) {
        V x[2][kG];
#pragma GCC unroll 16
        for (int t = 0; t < kG; ++t) {
          x[0][t] = S::zero();
          x[1][t] = S::zero();
#pragma GCC unroll 16
          for (int m = 0; m < M; ++m) {
            const int64_t d = g + kPasses * t + kW * m;
            x[0][t] = S::fmadd(qv[t][m], S::set1(k[b][d]), x[0][t]);
            x[1][t] = S::fmadd(qv[t][m], S::set1(k[b + 1][d]), x[1][t]);
          }
        }
        halving_tree(x[0], kG);
        halving_tree(x[1], kG);
        part[g][b] = x[0][0];
        part[g][b + 1] = x[1][0];
      }
    }
    for (int64_t b = 0; b < nb; ++b) {
      V y[kPasses];
      for (int g = 0; g < kPasses; ++g) y[g] = part[g][b];
      halving_tree(y, kPasses);
      S::store(s + b * kW, y[0]);
    }
  }

  // scores' products when at most half the lanes are used (a decode token's GQA group of 8 on
  // AVX-512): the upper half of the lanes takes the next position, so one hsum_lanes serves two
  // positions and no fma is idle. Every lane's dot is the same fma chain and lane sum as in
  // the one-position pass, so the bits do not change. Row p's upper lanes (idle) keep p + 1's.
  template <class EK, class EV>
  static void scores_pairs(const AttentionArgs& a, const Lanes& ln, const Chunk& c,
                           const int64_t* offset, float* s) {
    constexpr int kH = kW / 2;
    const int64_t hd = a.head_dim;
    constexpr int64_t kAhead = kAttentionPrefetchAhead;
    for (int64_t p = 0; p < c.nc; p += 2) {
      const int64_t p1 = p + 1 < c.nc ? p + 1 : p;  // an odd last position pairs with itself
      for (int64_t r = p + kAhead; r < p + kAhead + 2 && r < c.nc; ++r)
        prefetch_row<EK>(EK::row(a.kv.k, offset[r]), hd);
      prefetch_row<EV>(EV::row(a.kv.v, offset[p]), hd);
      prefetch_row<EV>(EV::row(a.kv.v, offset[p1]), hd);
      const typename EK::Row k0 = EK::row(a.kv.k, offset[p]);
      const typename EK::Row k1 = EK::row(a.kv.k, offset[p1]);
      V acc[kW];
      for (int L = 0; L < kW; ++L) acc[L] = S::zero();
      for (int64_t i = 0; i < hd; i += kW) {
        const V kv0 = Kern::template load_kv<EK>(k0, i);
        const V kv1 = Kern::template load_kv<EK>(k1, i);
#pragma GCC unroll 8
        for (int L = 0; L < kH; ++L) {
          const V q = S::load(ln.q[L] + i);
          acc[L] = S::fmadd(q, kv0, acc[L]);
          acc[L + kH] = S::fmadd(q, kv1, acc[L + kH]);
        }
      }
      const V sums = S::hsum_lanes(acc);
      S::store(s + p * kW, sums);
      S::store(s + (p + 1) * kW, sums);  // row p + 1 < kAttentionChunk: p is even
      for (int L = 0; L < kH; ++L) s[(p + 1) * kW + L] = s[p * kW + kH + L];
    }
  }

  // Sets s[p][lane] to `value` where position c0 + p is past the lane's context.
  static void mask_ragged_rows(const Lanes& ln, const Chunk& c, float* s, float value) {
    for (int64_t p = c.full; p < c.nc; ++p)
      for (int L = 0; L < ln.n_used; ++L)
        if (c.c0 + p >= ln.n_ctx[L]) s[p * kW + L] = value;
  }

  // attention_softmax_update for every lane: scores in s become the chunk's weights.
  static void softmax_update(const Lanes& ln, const Chunk& c, const int64_t hd, float* s, float* m,
                             float* l) {
    mask_ragged_rows(ln, c, s, -__builtin_inff());
    V chunk_max = S::load(s);  // s[p] > max ? s[p] : max, as the scalar loop
    for (int64_t p = 1; p < c.nc; ++p) chunk_max = S::max(S::load(s + p * kW), chunk_max);
    float cm[kW];
    S::store(cm, chunk_max);
    for (int L = 0; L < ln.n_used; ++L) {
      if (!(cm[L] > m[L])) continue;
      if (l[L] > 0.0f) {  // rescale what was summed under the old max
        const float alpha = __builtin_expf(m[L] - cm[L]);
        Kern::scale(ln.out[L], alpha, hd);
        l[L] *= alpha;
      }
      m[L] = cm[L];
    }
    const V mv = S::load(m);
    for (int64_t p = 0; p < c.nc; ++p) S::store(s + p * kW, simd_exp<S>(S::sub(S::load(s + p * kW), mv)));
    mask_ragged_rows(ln, c, s, 0.0f);
    V lv = S::load(l);
    for (int64_t p = 0; p < c.nc; ++p) lv = S::add(lv, S::load(s + p * kW));
    S::store(l, lv);
  }

  // out[lane] += w[p][lane] * v_p over rows [p0, p1) in order, for lanes [0, NL); kGuarded
  // issues the fma only for used lanes whose context holds the position. (Unguarded, idle
  // lanes accumulate too: they are never stored.) The sums run in a local copy of acc: through
  // the pointer GCC stored every accumulator back after each position, which made the loop
  // store-bound (16 stores per 16 fmas).
  template <class EV, bool kGuarded, int NL>
  static void weighted_rows(const AttentionArgs& a, const Lanes& ln, int64_t c0, int64_t p0, int64_t p1,
                            const int64_t* offset, const float* w, int64_t i, V* acc) {
    V r[NL];
    for (int L = 0; L < NL; ++L) r[L] = acc[L];
    for (int64_t p = p0; p < p1; ++p) {
      const V vv = Kern::template load_kv<EV>(EV::row(a.kv.v, offset[p]), i);
#pragma GCC unroll 16
      for (int L = 0; L < NL; ++L)
        if (!kGuarded || c0 + p < ln.n_ctx[L]) r[L] = S::fmadd(S::set1(w[p * kW + L]), vv, r[L]);
    }
    for (int L = 0; L < NL; ++L) acc[L] = r[L];
  }

  template <class EV>
  static void weighted_sum(const AttentionArgs& a, const Lanes& ln, const Chunk& c, const int64_t* offset,
                           const float* w) {
    for (int64_t i = 0; i < a.head_dim; i += kW) {
      V acc[kW];
      for (int L = 0; L < kW; ++L) acc[L] = L < ln.n_used ? S::load(ln.out[L] + i) : S::zero();
      // Rows [0, full) hold every used lane's context: no guard, and half the lanes when the
      // upper half is idle.
      if (ln.n_used <= kW / 2)
        weighted_rows<EV, false, kW / 2>(a, ln, c.c0, 0, c.full, offset, w, i, acc);
      else
        weighted_rows<EV, false, kW>(a, ln, c.c0, 0, c.full, offset, w, i, acc);
      weighted_rows<EV, true, kW>(a, ln, c.c0, c.full, c.nc, offset, w, i, acc);
      for (int L = 0; L < ln.n_used; ++L) S::store(ln.out[L] + i, acc[L]);
    }
  }

  // The lanes' whole contexts (one sequence, no window cut), chunk by chunk.
  template <class EK, class EV>
  static void run(const AttentionArgs& a, const Lanes& ln, BlockTableView table, int64_t kvh) {
    const int64_t hd = a.head_dim;
    const int64_t bs = a.kv.block_size;
    const int64_t slot_stride = a.n_kv_heads * hd;
    float m[kW];
    float l[kW];
    alignas(64) float s[kAttentionChunk * kW];  // [position][lane]: scores, then weights
    int64_t offset[kAttentionChunk];            // of each position's K/V row in the layer
    int64_t max_ctx = 0;
    int64_t min_ctx = ln.n_ctx[0];
    for (int L = 0; L < kW; ++L) {
      m[L] = -__builtin_inff();
      l[L] = 0.0f;
    }
    for (int L = 0; L < ln.n_used; ++L) {
      for (int64_t d = 0; d < hd; ++d) ln.out[L][d] = 0.0f;
      max_ctx = ln.n_ctx[L] > max_ctx ? ln.n_ctx[L] : max_ctx;
      min_ctx = ln.n_ctx[L] < min_ctx ? ln.n_ctx[L] : min_ctx;
    }
    // The lanes' queries transposed, [hd][kW], for score_rows.
    alignas(64) float qt[kMaxScoreDims * kW];
    const bool by_rows = ln.n_used > kW / 2 && with_dims_per_lane(hd / kW, []<int>() {});
    if (by_rows)
      for (int64_t d = 0; d < hd; ++d)
        for (int L = 0; L < kW; ++L) qt[d * kW + L] = ln.q[L][d];
    for (int64_t c0 = 0; c0 < max_ctx; c0 += kAttentionChunk) {
      Chunk c{c0, max_ctx - c0 < kAttentionChunk ? max_ctx - c0 : kAttentionChunk, 0};
      c.full = min_ctx - c0 < 0 ? 0 : (min_ctx - c0 < c.nc ? min_ctx - c0 : c.nc);
      attention_chunk_offsets(table, bs, c0, c.nc, slot_stride, kvh * hd, offset);
      scores<EK, EV>(a, ln, c, offset, by_rows ? qt : nullptr, s);
      softmax_update(ln, c, hd, s, m, l);
      weighted_sum<EV>(a, ln, c, offset, s);
    }
    for (int L = 0; L < ln.n_used; ++L) Kern::scale(ln.out[L], 1.0f / l[L], hd);
  }

  // Tokens [t0, t0 + nt) of one sequence whose contexts no window cuts, KV head kvh: each
  // query head subgroup in passes of kW / subgroup-size tokens.
  template <class EK, class EV>
  static void tile(const AttentionArgs& a, int64_t t0, int64_t nt, int64_t kvh) {
    const int64_t hd = a.head_dim;
    const int64_t n_rep = a.n_heads / a.n_kv_heads;
    const BlockTableView table = a.block_tables[a.seq_index[t0]];
    for (int64_t g0 = 0; g0 < n_rep; g0 += kAttentionGroup) {
      const int64_t ng = n_rep - g0 < kAttentionGroup ? n_rep - g0 : kAttentionGroup;
      const int64_t per_pass = kW / ng;
      for (int64_t j0 = 0; j0 < nt; j0 += per_pass) {
        Lanes ln;
        ln.n_used = static_cast<int>((nt - j0 < per_pass ? nt - j0 : per_pass) * ng);
        for (int L = 0; L < kW; ++L) {
          if (L < ln.n_used) {
            const int64_t t = t0 + j0 + L / ng;
            const int64_t row = (t * a.n_heads + kvh * n_rep + g0 + L % ng) * hd;
            ln.q[L] = a.q + row;
            ln.out[L] = a.out + row;
            ln.n_ctx[L] = static_cast<int64_t>(a.positions[t]) + 1;
          } else {
            ln.q[L] = ln.q[0];
            ln.out[L] = nullptr;
            ln.n_ctx[L] = 0;
          }
        }
        run<EK, EV>(a, ln, table, kvh);
      }
    }
  }
};

// Dispatch on the storage types of K and V (checked by the callers).
template <class S>
void attention_tile_impl(const AttentionArgs& a, int64_t t0, int64_t nt, int64_t kvh) {
  with_kv_storage(a.kv.k_dtype, [&]<class EK>() {
    with_kv_storage(a.kv.v_dtype,
                    [&]<class EV>() { AttentionTile<S>::template tile<EK, EV>(a, t0, nt, kvh); });
  });
}

}  // namespace
}  // namespace tally::cpu
