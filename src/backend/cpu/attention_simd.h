// Inner loops of attention over a SIMD primitive set S with 16-bit and 8/4-bit integer loads
// (simd_half_*.h), and the int8 score operations I8 (attention_int8_*.h; void where unused).
// Include only from *_avx2.cpp / *_avx512.cpp, after the primitive header.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backend/cpu/attention_impl.h"
#include "backend/cpu/attention_int8_simd.h"
#include "backend/cpu/simd_math.h"

namespace tally::cpu {
namespace {

template <class S, class I8 = void>
struct SimdKernels {
  static constexpr int kW = S::kWidth;

  using V = typename S::V;

  // Values i..i+kW-1 of a row of storage type E, widened or dequantized to f32 with the bits
  // of E::at. For q8_0 / q4_0 the kW values lie in one block (and one nibble half): i is a
  // multiple of kW, kW divides 16, and a row starts at a multiple of its length in a block.
  template <class E>
  [[gnu::always_inline]] static V load_kv(typename E::Row r, int64_t i) {
    if constexpr (std::is_same_v<E, KvF16>) {
      return S::load_f16(r + i);
    } else if constexpr (std::is_same_v<E, KvBF16>) {
      return S::load_bf16(r + i);
    } else if constexpr (kKvBlocked<E>) {
      const int64_t j = r.start + i;
      return load_block_values<E>(r.block[j / kQBlock], j % kQBlock);
    } else {
      return S::load(r + i);
    }
  }
  // Values jj..jj+kW-1 of block b of a blocked type E, as load_kv: the levels times the scale.
  template <class E>
  [[gnu::always_inline]] static V load_block_values(const typename E::Block& b, int64_t jj) {
    return S::mul(load_block_levels<E>(b, jj), S::set1_f16(b.d));
  }
  template <class E>
  [[gnu::always_inline]] static V load_block_levels(const typename E::Block& b, int64_t jj) {
    if constexpr (std::is_same_v<E, KvQ8_0>)
      return S::load_i8(b.qs + jj);
    else
      return jj < kQBlock / 2 ? S::load_q4_low(b.qs + jj) : S::load_q4_high(b.qs + jj - kQBlock / 2);
  }
  // f.template operator()<NG>() with NG = ng (1..kAttentionGroup) as a constant, so the
  // kernels keep one register accumulator per head.
  template <class F>
  static void with_group_size(int64_t ng, F&& f) {
    static_assert(kAttentionGroup == 8, "one case per group size below");
    switch (ng) {
      case 8: return f.template operator()<8>();
      case 7: return f.template operator()<7>();
      case 6: return f.template operator()<6>();
      case 5: return f.template operator()<5>();
      case 4: return f.template operator()<4>();
      case 3: return f.template operator()<3>();
      case 2: return f.template operator()<2>();
      default: return f.template operator()<1>();
    }
  }

  // dots[g] = q[g] . k for g < ng in simd_dot's order (lanes with FMA, fixed-order lane sum,
  // tail in index order), for any E. Each K vector is loaded (and widened) once for all the
  // heads, and the heads' NG fma chains run side by side.
  template <class E, int NG>
  static void scores_n(const float* q, typename E::Row k, int64_t n, float* dots) {
    const int64_t nv = n >= kW ? n - n % kW : 0;
    V acc[NG];
    for (int g = 0; g < NG; ++g) acc[g] = S::zero();
    for (int64_t i = 0; i < nv; i += kW) {
      const V kv = load_kv<E>(k, i);
      for (int g = 0; g < NG; ++g) acc[g] = S::fmadd(S::load(q + g * n + i), kv, acc[g]);
    }
    for (int g = 0; g < NG; ++g) {
      float sum = nv > 0 ? S::hsum(acc[g]) : 0.0f;
      for (int64_t i = nv; i < n; ++i) sum = __builtin_fmaf(q[g * n + i], E::at(k, i), sum);
      dots[g] = sum;
    }
  }
  template <class E>
  static void scores(const float* q, int64_t ng, typename E::Row k, int64_t n, float* dots) {
    with_group_size(ng, [&]<int NG>() { scores_n<E, NG>(q, k, n, dots); });
  }

  // s[g * kAttentionChunk + p] = the int8 score of head g at the chunk's position p.
  template <class EK, class EV>
  static void scores_int8(const QueryInt8& qq, int64_t ng, const void* k_layer, const void* v_layer,
                          const int64_t* offset, int64_t nc, int64_t hd, int64_t prefetch_heads, float* s) {
    with_group_size(ng, [&]<int NG>() {
      Int8Scores<I8>::template scores<EK, EV, NG>(qq, k_layer, v_layer, offset, nc, hd, prefetch_heads, s);
    });
  }

  // out[g] = fma(w[g * w_stride + p], v_p, out[g]) for the chunk's positions p in order, every
  // element one fma chain: one output vector of each head stays in a register across the
  // chunk, and each V vector is loaded (and widened) once for all the heads.
  // Each position's row is found once for all its vectors. A blocked row's block and lane of
  // value i are found once for all the positions (a head starts at the same lane of a block at
  // every position: a slot is whole blocks), and the positions' scales of a block are widened
  // together, once (the bits of set1_f16).
  template <class E, int NG>
  static void weighted_sum_n(float* out, const float* w, int64_t w_stride, const void* v_layer,
                             const int64_t* offset, int64_t nc, int64_t n) {
    typename E::Row rows[kAttentionChunk];
    for (int64_t p = 0; p < nc; ++p) rows[p] = E::row(v_layer, offset[p]);
    [[maybe_unused]] alignas(64) float scale[kAttentionChunk];
    [[maybe_unused]] int64_t scale_block = -1;  // whose scales `scale` holds
    int64_t i = 0;
    for (; i + kW <= n; i += kW) {
      V acc[NG];
      for (int g = 0; g < NG; ++g) acc[g] = S::load(out + g * n + i);
      [[maybe_unused]] int64_t block = 0, lane = 0;
      if constexpr (kKvBlocked<E>) {
        block = (rows[0].start + i) / kQBlock;
        lane = (rows[0].start + i) % kQBlock;
        if (block != scale_block) {
          alignas(64) uint16_t h[kAttentionChunk];  // lanes past nc: zero, never used
          for (int64_t p = 0; p < nc; ++p) h[p] = rows[p].block[block].d;
          for (int64_t p = nc; p % kW != 0; ++p) h[p] = 0;
          for (int64_t p = 0; p < nc; p += kW) S::store(scale + p, S::load_f16(h + p));
          scale_block = block;
        }
      }
      for (int64_t p = 0; p < nc; ++p) {
        V vv;
        if constexpr (kKvBlocked<E>)
          vv = S::mul(load_block_levels<E>(rows[p].block[block], lane), S::set1(scale[p]));
        else
          vv = load_kv<E>(rows[p], i);
        for (int g = 0; g < NG; ++g) acc[g] = S::fmadd(S::set1(w[g * w_stride + p]), vv, acc[g]);
      }
      for (int g = 0; g < NG; ++g) S::store(out + g * n + i, acc[g]);
    }
    for (; i < n; ++i)
      for (int64_t p = 0; p < nc; ++p)
        for (int g = 0; g < NG; ++g)
          out[g * n + i] = __builtin_fmaf(w[g * w_stride + p], E::at(rows[p], i), out[g * n + i]);
  }
  template <class E>
  static void weighted_sum(float* out, int64_t ng, const float* w, int64_t w_stride,
                           const void* v_layer, const int64_t* offset, int64_t nc, int64_t n) {
    with_group_size(
        ng, [&]<int NG>() { weighted_sum_n<E, NG>(out, w, w_stride, v_layer, offset, nc, n); });
  }

  // The largest of s[0..n) (n >= 1): lanes, then a tree over them, then the tail. For finite
  // scores the scalar chain's value (a max is exact; a +0/-0 tie cannot change the softmax),
  // without its n dependent compares per head.
  static float max_of(const float* s, int64_t n) {
    int64_t i = 0;
    float m = s[0];
    if (n >= kW) {
      V mv = S::load(s);
      for (i = kW; i + kW <= n; i += kW) mv = S::max(S::load(s + i), mv);
      alignas(64) float lanes[kW];
      S::store(lanes, mv);
      for (int w = kW / 2; w >= 1; w /= 2)
        for (int j = 0; j < w; ++j) lanes[j] = lanes[j + w] > lanes[j] ? lanes[j + w] : lanes[j];
      m = lanes[0];
    }
    for (; i < n; ++i) m = s[i] > m ? s[i] : m;
    return m;
  }

  static void scale(float* y, float a, int64_t n) {
    const typename S::V va = S::set1(a);
    int64_t i = 0;
    for (; i + kW <= n; i += kW) S::store(y + i, S::mul(va, S::load(y + i)));
    for (; i < n; ++i) y[i] *= a;
  }
  static void exp_inplace(float* s, int64_t n) {
    int64_t i = 0;
    for (; i + kW <= n; i += kW) S::store(s + i, simd_exp<S>(S::load(s + i)));
    if (i == n) return;
    float tail[kW] = {};
    for (int64_t k = 0; k < n - i; ++k) tail[k] = s[i + k];
    S::store(tail, simd_exp<S>(S::load(tail)));
    for (int64_t k = 0; k < n - i; ++k) s[i + k] = tail[k];
  }
};

}  // namespace
}  // namespace tally::cpu
