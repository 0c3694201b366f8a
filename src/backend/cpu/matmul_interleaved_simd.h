// Q8_0 / Q4_0 kernels over the interleaved layout (matmul_kernels.h), shared by
// matmul_avx2.cpp, matmul_avxvnni.cpp and matmul_avx512.cpp (only those include this: it needs
// AVX2 + FMA + F16C).
// The integer arithmetic comes from the file's policy class `Isa`:
//   Isa::Q4Acc, q4_zero(), q4_step(acc, u8 quants, s8 x), q4_finish(acc) -> int32 x 8
//   Isa::q8_step(int32 acc, u8 |w|, s8 x with w's sign) -> int32 x 8
// (maddubs with an int16 accumulator on AVX2; vpdpbusd on AVX-512 VNNI).
//
// One 32-byte chunk holds 4 quants of each of 8 rows, so a broadcast of 4 activation bytes
// gives every row its partial dot in its own int32 lane: no horizontal sums. A microkernel
// call takes one group of 8 rows against T tokens (T accumulators of 8 rows each); every
// (row, token) result is the single fma chain over blocks of the canonical order, whatever T.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_quant.h"

namespace tally::cpu::detail::simd {
// Internal linkage: this header is compiled into objects with different ISA flags (avx2,
// avx2-vnni, avx512), and a shared template instance would let the linker keep any one
// copy, AVX-512 instructions included, for all of them.
namespace {

// 4 activation bytes in every 32-bit lane. vbroadcastss from memory: a plain load on AMD
// cores (vpbroadcastd from memory also takes a shuffle port there).
[[gnu::always_inline]] static inline __m256i broadcast_u32(const int8_t* p) {
  return _mm256_castps_si256(_mm256_broadcast_ss(reinterpret_cast<const float*>(p)));
}

[[gnu::always_inline]] static inline __m256i broadcast_i32(const int32_t* p) {
  return _mm256_castps_si256(_mm256_broadcast_ss(reinterpret_cast<const float*>(p)));
}

// Keeps a running sum in its register: without it GCC re-associates the integer adds of a
// block into a tree and spills the products of all tokens to the stack.
[[gnu::always_inline]] static inline __m256i keep(__m256i v) {
  __asm__("" : "+x"(v));
  return v;
}

// How far ahead of the quants being read a one-token product prefetches.
inline constexpr int kPrefetchBytes = 1024;

// Decode streams the weights from memory: asks for `lines` cache lines kPrefetchBytes past a
// block's quants.
[[gnu::always_inline]] static inline void prefetch_ahead(const uint8_t* q, int lines) {
  for (int l = 0; l < lines; ++l)
    _mm_prefetch(reinterpret_cast<const char*>(q) + kPrefetchBytes + 64 * l, _MM_HINT_T0);
}

// Block b's f16 weight scales of the group's 8 rows, as f32.
[[gnu::always_inline]] static inline __m256 block_scales(const uint8_t* scales, int64_t b) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16 * b)));
}

// The canonical step of one block for 8 rows of one token (matmul_kernels.h):
// acc = fma(w_scale * x_scale, float(int_dot), acc).
[[gnu::always_inline]] static inline __m256 block_fma(__m256 w_scale, float x_scale, __m256i dot,
                                                      __m256 acc) {
  return _mm256_fmadd_ps(_mm256_mul_ps(w_scale, _mm256_set1_ps(x_scale)),
                         _mm256_cvtepi32_ps(dot), acc);
}

// Quants of block b of a group: kInterleave * qs_bytes bytes; scales after all quants.
struct Q4_0x8 {
  static constexpr DType kType = DType::kQ4_0;
  static constexpr int kQsBytes = kQBlock / 2;

  // A block's int dot from its int16 sums: the weights are q - 8, so 8 * sum(x) of the block
  // (sums8) comes off (exact integers).
  template <class Isa>
  [[gnu::always_inline]] static inline __m256i finish(typename Isa::Q4Acc s, __m256i sums8) {
    return _mm256_sub_epi32(Isa::q4_finish(s), sums8);
  }

  template <class Isa, int T>
  [[gnu::always_inline]] static inline void run(const uint8_t* group, int64_t nb,
                                                const TokenRows<T>& x, __m256* acc) {
    const uint8_t* scales = group + nb * kInterleave * kQsBytes;
    const __m256i m4 = _mm256_set1_epi8(15);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* q = group + b * kInterleave * kQsBytes;
      if (T == 1) prefetch_ahead(q, 2);
      typename Isa::Q4Acc s[T];
      for (int t = 0; t < T; ++t) s[t] = Isa::q4_zero();
      for (int j = 0; j < kQsBytes / 4; ++j) {
        const __m256i v = load_i8x32(q + 32 * j);
        const __m256i lo = _mm256_and_si256(v, m4);                        // elements 4j..4j+3
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);  // 16+4j..16+4j+3
        for (int t = 0; t < T; ++t)
          s[t] = keep(Isa::q4_step(s[t], lo, broadcast_u32(x.q[t] + b * kQBlock + 4 * j)));
        for (int t = 0; t < T; ++t)
          s[t] = keep(Isa::q4_step(s[t], hi, broadcast_u32(x.q[t] + b * kQBlock + 16 + 4 * j)));
      }
      const __m256 w_scale = block_scales(scales, b);
      for (int t = 0; t < T; ++t)
        acc[t] = block_fma(w_scale, x.d[t][b], finish<Isa>(s[t], broadcast_i32(x.sums8[t] + b)),
                           acc[t]);
    }
  }
};

// One token against two groups (16 rows) at once: decode's matvec. Each block's activation
// broadcasts, scale and offset serve both groups and the loop's bookkeeping is shared: ~52
// instructions a group-block instead of ~60. At one token the core's issue rate and its two
// integer-multiply ports bound the kernel (hence also Avx2Dot::q4_finish's shifts), and every
// cycle saved lets the memory stream run further ahead. Each (row, token) keeps the canonical
// chain, bit for bit.
template <class Isa>
[[gnu::always_inline]] static inline void q4_0_pair_one_token(const uint8_t* g0, const uint8_t* g1,
                                                              int64_t nb, const TokenRows<1>& x,
                                                              __m256* acc0, __m256* acc1) {
  constexpr int kQsBytes = Q4_0x8::kQsBytes;
  const uint8_t* scales0 = g0 + nb * kInterleave * kQsBytes;
  const uint8_t* scales1 = g1 + nb * kInterleave * kQsBytes;
  const __m256i m4 = _mm256_set1_epi8(15);
  __m256 a0 = *acc0, a1 = *acc1;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q0 = g0 + b * kInterleave * kQsBytes;
    const uint8_t* q1 = g1 + b * kInterleave * kQsBytes;
    prefetch_ahead(q0, 2);
    prefetch_ahead(q1, 2);
    typename Isa::Q4Acc s0 = Isa::q4_zero(), s1 = Isa::q4_zero();
    for (int j = 0; j < kQsBytes / 4; ++j) {
      const __m256i v0 = keep(load_i8x32(q0 + 32 * j));  // in a register: loaded once
      const __m256i v1 = keep(load_i8x32(q1 + 32 * j));
      const __m256i xl = broadcast_u32(x.q[0] + b * kQBlock + 4 * j);
      const __m256i xh = broadcast_u32(x.q[0] + b * kQBlock + 16 + 4 * j);
      s0 = keep(Isa::q4_step(s0, _mm256_and_si256(v0, m4), xl));
      s1 = keep(Isa::q4_step(s1, _mm256_and_si256(v1, m4), xl));
      s0 = keep(Isa::q4_step(s0, _mm256_and_si256(_mm256_srli_epi16(v0, 4), m4), xh));
      s1 = keep(Isa::q4_step(s1, _mm256_and_si256(_mm256_srli_epi16(v1, 4), m4), xh));
    }
    const __m256i sums8 = broadcast_i32(x.sums8[0] + b);
    a0 = block_fma(block_scales(scales0, b), x.d[0][b], Q4_0x8::finish<Isa>(s0, sums8), a0);
    a1 = block_fma(block_scales(scales1, b), x.d[0][b], Q4_0x8::finish<Isa>(s1, sums8), a1);
  }
  *acc0 = a0;
  *acc1 = a1;
}

struct Q8_0x8 {
  static constexpr DType kType = DType::kQ8_0;
  static constexpr int kQsBytes = kQBlock;

  template <class Isa, int T>
  [[gnu::always_inline]] static inline void run(const uint8_t* group, int64_t nb,
                                                const TokenRows<T>& x, __m256* acc) {
    const uint8_t* scales = group + nb * kInterleave * kQsBytes;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* q = group + b * kInterleave * kQsBytes;
      if (T == 1) prefetch_ahead(q, 4);
      __m256i s[T];
      for (int t = 0; t < T; ++t) s[t] = _mm256_setzero_si256();
      for (int j = 0; j < kQsBytes / 4; ++j) {
        const __m256i w = load_i8x32(q + 32 * j);
        const __m256i abs_w = _mm256_abs_epi8(w);  // u8: |-128| = 128 stays exact
        for (int t = 0; t < T; ++t)
          s[t] = keep(Isa::q8_step(
              s[t], abs_w, _mm256_sign_epi8(broadcast_u32(x.q[t] + b * kQBlock + 4 * j), w)));
      }
      const __m256 w_scale = block_scales(scales, b);
      for (int t = 0; t < T; ++t) acc[t] = block_fma(w_scale, x.d[t][b], s[t], acc[t]);
    }
  }
};

// Dwords 0..3 of a[r] (r < 4) transposed: out[j] = (a0.dj, a1.dj, a2.dj, a3.dj) in each
// 128-bit half independently.
[[gnu::always_inline]] static inline void transpose4_epi32(const __m256i* a, __m256i* out) {
  const __m256i t0 = _mm256_unpacklo_epi32(a[0], a[1]);
  const __m256i t1 = _mm256_unpackhi_epi32(a[0], a[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(a[2], a[3]);
  const __m256i t3 = _mm256_unpackhi_epi32(a[2], a[3]);
  out[0] = _mm256_unpacklo_epi64(t0, t2);
  out[1] = _mm256_unpackhi_epi64(t0, t2);
  out[2] = _mm256_unpacklo_epi64(t1, t3);
  out[3] = _mm256_unpackhi_epi64(t1, t3);
}

// interleave_group for 8 real rows (no padding), with vector transposes: what a task does
// to rows in GGUF's layout before running the kernels on them.
template <class Ops>
[[gnu::always_inline]] static inline void interleave_group_simd(const uint8_t* const* rows,
                                                                int64_t nb, uint8_t* dst) {
  constexpr int kBlockBytes = 2 + Ops::kQsBytes;
  constexpr int kQuantBytes = kInterleave * Ops::kQsBytes;
  uint8_t* scales = dst + nb * kQuantBytes;
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t off = b * kBlockBytes;
    __m256i* q = reinterpret_cast<__m256i*>(dst + b * kQuantBytes);
    if constexpr (Ops::kQsBytes == 16) {
      __m256i a[4], out[4];
      for (int r = 0; r < 4; ++r)
        a[r] = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(rows[r + 4] + off + 2),
                                   reinterpret_cast<const __m128i*>(rows[r] + off + 2));
      transpose4_epi32(a, out);
      for (int j = 0; j < 4; ++j) _mm256_storeu_si256(q + j, out[j]);
    } else {
      __m256i lo[4], hi[4], out[4];
      for (int r = 0; r < 4; ++r) {
        const __m256i x0 = load_i8x32(rows[r] + off + 2), x1 = load_i8x32(rows[r + 4] + off + 2);
        lo[r] = _mm256_permute2x128_si256(x0, x1, 0x20);  // dwords 0..3 of rows r, r+4
        hi[r] = _mm256_permute2x128_si256(x0, x1, 0x31);  // dwords 4..7
      }
      transpose4_epi32(lo, out);
      for (int j = 0; j < 4; ++j) _mm256_storeu_si256(q + j, out[j]);
      transpose4_epi32(hi, out);
      for (int j = 0; j < 4; ++j) _mm256_storeu_si256(q + 4 + j, out[j]);
    }
    for (int r = 0; r < kInterleave; ++r)
      std::memcpy(scales + (b * kInterleave + r) * 2, rows[r] + off, 2);
  }
}

// The tile's rows as interleaved groups: in place when the matrix is repacked, else packed
// into per-thread scratch (grown to the largest tile, never shrunk).
template <class Ops>
const uint8_t* tile_groups(const MatmulTile& tile, int64_t group_bytes) {
  const WeightMatrix& w = *tile.w;
  const int64_t g0 = tile.row_begin / kInterleave;
  if (w.layout == WeightLayout::kInterleaved8) return w.data + g0 * group_bytes;
  const int64_t g1 = (tile.row_end + kInterleave - 1) / kInterleave;
  // 64-byte aligned, as RepackedWeights is: chunk loads must not straddle cache lines.
  thread_local std::vector<uint8_t> scratch;
  if (static_cast<int64_t>(scratch.size()) < (g1 - g0) * group_bytes + 64)
    scratch.resize(static_cast<size_t>((g1 - g0) * group_bytes + 64));
  uint8_t* base = scratch.data() + (-reinterpret_cast<uintptr_t>(scratch.data()) & 63);
  const int64_t nb = w.n_in / kQBlock;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* rows[kInterleave];
    for (int r = 0; r < kInterleave; ++r) {
      const int64_t o = g * kInterleave + r;
      rows[r] = o < w.n_out ? w.data + o * w.row_bytes : nullptr;
    }
    uint8_t* dst = base + (g - g0) * group_bytes;
    if (rows[kInterleave - 1] != nullptr) {
      interleave_group_simd<Ops>(rows, nb, dst);
    } else {
      interleave_group(Ops::kQsBytes, rows, nb, dst);
    }
  }
  return base;
}

// Stores the valid rows of group g's 8 outputs for one token.
[[gnu::always_inline]] static inline void store_group(const MatmulTile& tile, int64_t g, int64_t t,
                                                      __m256 acc) {
  const WeightMatrix& w = *tile.w;
  const int64_t o = g * kInterleave;
  const int64_t valid = std::min<int64_t>(kInterleave, w.n_out - o);
  float* y = tile.y + t * w.n_out + o;
  if (valid == kInterleave) {
    _mm256_storeu_ps(y, acc);
  } else {
    alignas(32) float out[kInterleave];
    _mm256_store_ps(out, acc);
    std::memcpy(y, out, static_cast<size_t>(valid) * sizeof(float));
  }
}

// T tokens from t against one group; writes the valid rows of y.
template <class Isa, class Ops, int T>
void group_tokens(const uint8_t* group, const MatmulTile& tile, int64_t g, int64_t t) {
  const WeightMatrix& w = *tile.w;
  const int64_t nb = w.n_in / kQBlock;
  const TokenRows<T> x = token_rows<T>(*tile.acts, t, w.n_in, nb, nb);
  __m256 acc[T];
  for (int i = 0; i < T; ++i) acc[i] = _mm256_setzero_ps();
  Ops::template run<Isa, T>(group, nb, x, acc);
  for (int i = 0; i < T; ++i) store_group(tile, g, t + i, acc[i]);
}

// Tokens in blocks of kInterleavedTokenBlock (their int8 rows stay in L2), and within a
// block each group of the tile against its tokens, kInterleavedMaxTokens at a time: the
// tile's weights (16 rows) stay in L1/L2 across token blocks, so each is read from memory
// once per call.
inline constexpr int64_t kInterleavedTokenBlock = 64;
// Tokens per microkernel call: T int32/int16 and T float accumulators, the weights and a
// broadcast fit the 16 vector registers.
inline constexpr int kInterleavedMaxTokens = 4;

template <class Isa, class Ops>
void tile_interleaved(const MatmulTile& tile) {
  const WeightMatrix& w = *tile.w;
  const MatmulActs& a = *tile.acts;
  const int64_t group_bytes = kInterleave * dtype_row_bytes(w.type, w.n_in);
  const uint8_t* groups = tile_groups<Ops>(tile, group_bytes);
  const int64_t g0 = tile.row_begin / kInterleave;
  const int64_t g1 = (tile.row_end + kInterleave - 1) / kInterleave;
  if constexpr (Ops::kType == DType::kQ4_0) {
    if (a.n_tokens == 1) {  // decode's matvec: groups in pairs
      const int64_t nb = w.n_in / kQBlock;
      const TokenRows<1> x = token_rows<1>(a, 0, w.n_in, nb, nb);
      int64_t g = g0;
      for (; g + 2 <= g1; g += 2) {
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        const uint8_t* group = groups + (g - g0) * group_bytes;
        q4_0_pair_one_token<Isa>(group, group + group_bytes, nb, x, &acc0, &acc1);
        store_group(tile, g, 0, acc0);
        store_group(tile, g + 1, 0, acc1);
      }
      if (g < g1) group_tokens<Isa, Ops, 1>(groups + (g - g0) * group_bytes, tile, g, 0);
      return;
    }
  }
  for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kInterleavedTokenBlock) {
    const int64_t t_end = std::min(t0 + kInterleavedTokenBlock, a.n_tokens);
    for (int64_t g = g0; g < g1; ++g) {
      const uint8_t* group = groups + (g - g0) * group_bytes;
      int64_t t = t0;
      for (; t + kInterleavedMaxTokens <= t_end; t += kInterleavedMaxTokens)
        group_tokens<Isa, Ops, kInterleavedMaxTokens>(group, tile, g, t);
      const int64_t left = t_end - t;
      if constexpr (kInterleavedMaxTokens > 5) {
        if (left == 5) group_tokens<Isa, Ops, 5>(group, tile, g, t);
      }
      if constexpr (kInterleavedMaxTokens > 4) {
        if (left == 4) group_tokens<Isa, Ops, 4>(group, tile, g, t);
      }
      if (left == 3) group_tokens<Isa, Ops, 3>(group, tile, g, t);
      if (left == 2) group_tokens<Isa, Ops, 2>(group, tile, g, t);
      if (left == 1) group_tokens<Isa, Ops, 1>(group, tile, g, t);
    }
  }
}

}  // namespace
}  // namespace tally::cpu::detail::simd
