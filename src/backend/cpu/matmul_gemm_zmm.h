// The many-token GEMM of Q8_0 / Q4_0 on 512-bit vectors (AVX-512 VNNI), over the same
// interleaved layout as the 256-bit kernels (matmul_kernels.h): only matmul_avx512.cpp
// includes this.
//
// Register tile: two zmm of rows (4 interleaved groups = 32 rows; a zmm holds the same 32-byte
// chunk of two neighbouring groups) x T tokens (T <= kZmmTokens): 2T int32 block sums and 2T
// float accumulators, the chunk's unpacked quants, and one broadcast of 4 activation bytes
// that feeds two vpdpbusd (32 rows). The weights of the tile are loaded and unpacked once per
// block for the T tokens. A block's int32 sums start from the negated offset of the weights'
// unsigned form (one broadcast load per token), so no subtraction follows the dots.
//
// Same bits as the 256-bit kernels, whatever the tile: a block's integer dot is exact, and
// each (row, token) then takes the canonical step acc = fma(w_scale * x_scale, float(dot),
// acc) in block order, lane by lane, as block_fma does.
//   Q4_0: quants 0..15 (u8) against x (s8), minus 8 * sum(x) of the block, as on AVX2.
//   Q8_0: AVX-512 has no vpsignb, so the weights go in as u8 w + 128 (an xor) and
//         128 * sum(x) of the block comes off: exact in int32 (|sum| <= 32 * 255 * 127).
#pragma once

#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_interleaved_simd.h"

namespace tally::cpu::detail::simd {
// Internal linkage: the emulated test (bench/matmul_avx512_emulated.cpp) instantiates the same
// templates with other flags, and the linker must never pick one copy for both.
namespace {

// Tokens per register tile (2 x 6 int32 sums, 2 x 6 float accumulators, 4 unpacked weight
// vectors and a broadcast: 29 of the 32 zmm), and the fewest tokens for which a call takes
// the GEMM.
inline constexpr int kZmmTokens = 6;
// Tokens per block (16 tiles): their int8 rows stay in L2 (96 x 5632 bytes for tinyllama's
// n_ff) while a task's 32 rows stay in L1 / L2.
inline constexpr int64_t kZmmTokenBlock = 96;
inline constexpr int64_t kZmmMinTokens = 2;

// keep() for a zmm running sum. Under SIMDe's emulation (tests on CPUs without AVX-512) a
// __m512i is no register, and there is nothing to keep.
[[gnu::always_inline]] static inline __m512i keep_zmm(__m512i v) {
#ifdef __AVX512F__
  __asm__("" : "+v"(v));
#endif
  return v;
}

// int32 -> f32, lane by lane. SIMDe (the emulated test) lacks the 512-bit form: there the
// halves are converted apart, to the same values.
[[gnu::always_inline]] static inline __m512 cvt_i32_ps(__m512i v) {
#ifdef __AVX512F__
  return _mm512_cvtepi32_ps(v);
#else
  const __m256 lo = _mm256_cvtepi32_ps(_mm512_castsi512_si256(v));
  const __m256 hi = _mm256_cvtepi32_ps(_mm512_extracti64x4_epi64(v, 1));
  return _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
#endif
}

// 4 activation bytes in every 32-bit lane (vbroadcastss from memory: a plain load).
[[gnu::always_inline]] static inline __m512i broadcast_u32_zmm(const void* p) {
  float f;
  std::memcpy(&f, p, sizeof f);
  return _mm512_castps_si512(_mm512_set1_ps(f));
}

// The 32-byte chunk at offset `off` of two groups `stride` bytes apart, side by side.
[[gnu::always_inline]] static inline __m512i load_pair(const uint8_t* g, int64_t stride,
                                                       int64_t off) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + off));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + stride + off));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// Block b's f16 scales of two neighbouring groups (16 rows) as f32.
[[gnu::always_inline]] static inline __m512 pair_scales(const uint8_t* scales, int64_t stride,
                                                        int64_t b) {
  const __m256 lo = block_scales(scales, b), hi = block_scales(scales + stride, b);
  return _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
}

struct Q4_0Zmm {
  using Ops = Q4_0x8;
  static constexpr int kParts = 2;  // unpacked vectors per chunk: low and high nibbles
  // The sums start at -8 * sum(x) of the block: the quants are q + 8.
  static const int32_t* minus_offsets(const MatmulActs& a) { return a.minus_8sums; }
  // Part p of chunk j holds elements (16p + 4j .. +3) of the block.
  static constexpr int element(int j, int p) { return 16 * p + 4 * j; }
  [[gnu::always_inline]] static inline void unpack(__m512i v, __m512i* parts) {
    const __m512i m4 = _mm512_set1_epi8(15);
    parts[0] = _mm512_and_si512(v, m4);
    parts[1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  }
};

struct Q8_0Zmm {
  using Ops = Q8_0x8;
  static constexpr int kParts = 1;
  // The sums start at -128 * sum(x) of the block: the quants go in as w + 128.
  static const int32_t* minus_offsets(const MatmulActs& a) { return a.minus_128sums; }
  static constexpr int element(int j, int) { return 4 * j; }
  [[gnu::always_inline]] static inline void unpack(__m512i v, __m512i* parts) {
    parts[0] = _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
  }
};

// Bytes of the weights a panel's first token tile asks for ahead of the block it reads
// (with few tokens the panel streams from memory at the speed of that first tile).
inline constexpr int64_t kZmmPrefetchBytes = 1024;

// Z zmm of rows (2Z groups from `groups`, group_bytes apart) against T tokens: acc[t][z] gets
// rows of groups 2z, 2z+1 for token t. kPrefetch: ask for the groups' quants
// kZmmPrefetchBytes ahead (the tile that first touches the panel).
template <class Q, int Z, int T, bool kPrefetch>
[[gnu::always_inline]] static inline void zmm_tile(const uint8_t* groups, int64_t group_bytes,
                                                   int64_t nb, const TokenRows<T>& x,
                                                   const int32_t* const (&minus_offset)[T],
                                                   __m512 (&acc)[T][Z]) {
  constexpr int kQsBytes = Q::Ops::kQsBytes;
  constexpr int kChunks = kQsBytes / 4;
  constexpr int kBlockLines = kInterleave * kQsBytes / 64;
  const uint8_t* scales = groups + nb * kInterleave * kQsBytes;
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t q_off = b * kInterleave * kQsBytes;
    if constexpr (kPrefetch) {
      for (int g = 0; g < 2 * Z; ++g)
        for (int l = 0; l < kBlockLines; ++l)
          _mm_prefetch(reinterpret_cast<const char*>(groups + g * group_bytes + q_off) +
                           kZmmPrefetchBytes + 64 * l,
                       _MM_HINT_T0);
    }
    __m512i s[T][Z];
    for (int t = 0; t < T; ++t) {
      const __m512i start = broadcast_u32_zmm(minus_offset[t] + b);
      for (int z = 0; z < Z; ++z) s[t][z] = start;
    }
    for (int j = 0; j < kChunks; ++j) {
      __m512i w[Z][Q::kParts];
      for (int z = 0; z < Z; ++z)
        Q::unpack(load_pair(groups + 2 * z * group_bytes, group_bytes, q_off + 32 * j), w[z]);
      for (int p = 0; p < Q::kParts; ++p) {
        for (int t = 0; t < T; ++t) {
          const __m512i xb = broadcast_u32_zmm(x.q[t] + b * kQBlock + Q::element(j, p));
          for (int z = 0; z < Z; ++z) s[t][z] = keep_zmm(_mm512_dpbusd_epi32(s[t][z], w[z][p], xb));
        }
      }
    }
    __m512 w_scale[Z];
    for (int z = 0; z < Z; ++z) w_scale[z] = pair_scales(scales + 2 * z * group_bytes, group_bytes, b);
    for (int t = 0; t < T; ++t) {
      const __m512 x_scale = _mm512_set1_ps(x.d[t][b]);
      for (int z = 0; z < Z; ++z)
        acc[t][z] = _mm512_fmadd_ps(_mm512_mul_ps(w_scale[z], x_scale), cvt_i32_ps(s[t][z]),
                                    acc[t][z]);
    }
  }
}

// Runs zmm_tile on groups [g, g + 2Z) of the tile for tokens [t, t + T) and stores them.
template <class Q, int Z, int T, bool kPrefetch>
void zmm_tile_store(const uint8_t* tile_groups_base, const MatmulTile& tile, int64_t g0,
                    int64_t g, int64_t t, int64_t group_bytes) {
  const WeightMatrix& w = *tile.w;
  const int64_t nb = w.n_in / kQBlock;
  const TokenRows<T> x = token_rows<T>(*tile.acts, t, w.n_in, nb, nb);
  const int32_t* minus_offset[T];
  for (int i = 0; i < T; ++i) minus_offset[i] = Q::minus_offsets(*tile.acts) + (t + i) * nb;
  __m512 acc[T][Z];
  for (int i = 0; i < T; ++i)
    for (int z = 0; z < Z; ++z) acc[i][z] = _mm512_setzero_ps();
  zmm_tile<Q, Z, T, kPrefetch>(tile_groups_base + (g - g0) * group_bytes, group_bytes, nb, x,
                               minus_offset, acc);
  for (int i = 0; i < T; ++i) {
    for (int z = 0; z < Z; ++z) {
      store_group(tile, g + 2 * z, t + i, _mm512_castps512_ps256(acc[i][z]));
      // (extractf64x4: AVX512F, where extractf32x8 would need AVX512DQ, which dispatch does
      // not check)
      store_group(tile, g + 2 * z + 1, t + i,
                  _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[i][z]), 1)));
    }
  }
}

// A tile of `n` tokens (n <= T) from t: the template whose width is n.
template <class Q, int Z, int T, bool kPrefetch>
void zmm_tile_n(int64_t n, const uint8_t* base, const MatmulTile& tile, int64_t g0, int64_t g,
                int64_t t, int64_t group_bytes) {
  if constexpr (T > 0) {
    if (n == T) return zmm_tile_store<Q, Z, T, kPrefetch>(base, tile, g0, g, t, group_bytes);
    zmm_tile_n<Q, Z, T - 1, kPrefetch>(n, base, tile, g0, g, t, group_bytes);
  }
}

// Tokens [t, t_end) against groups [g, g + 2Z), kZmmTokens at a time, then the remainder.
// `first`: these are the first tokens to touch the panel, whose first tile prefetches.
template <class Q, int Z>
void zmm_tokens(const uint8_t* base, const MatmulTile& tile, int64_t g0, int64_t g, int64_t t,
                int64_t t_end, int64_t group_bytes, bool first) {
  if (first) {
    const int64_t n = std::min<int64_t>(kZmmTokens, t_end - t);
    zmm_tile_n<Q, Z, kZmmTokens, true>(n, base, tile, g0, g, t, group_bytes);
    t += n;
  }
  for (; t + kZmmTokens <= t_end; t += kZmmTokens)
    zmm_tile_store<Q, Z, kZmmTokens, false>(base, tile, g0, g, t, group_bytes);
  zmm_tile_n<Q, Z, kZmmTokens - 1, false>(t_end - t, base, tile, g0, g, t, group_bytes);
}

// The tile's rows in panels of 4 groups (a lone last pair or group takes a narrower tile;
// a lone group the 256-bit kernel), tokens in blocks of kZmmTokenBlock so their int8 rows
// stay in L2 while the tile's weights stay in L1.
template <class Isa, class Q>
void tile_gemm_zmm(const MatmulTile& tile) {
  const MatmulActs& a = *tile.acts;
  if (a.n_tokens < kZmmMinTokens) return tile_interleaved<Isa, typename Q::Ops>(tile);
  const WeightMatrix& w = *tile.w;
  const int64_t group_bytes = kInterleave * dtype_row_bytes(w.type, w.n_in);
  const uint8_t* base = tile_groups<typename Q::Ops>(tile, group_bytes);
  const int64_t g0 = tile.row_begin / kInterleave;
  const int64_t g1 = (tile.row_end + kInterleave - 1) / kInterleave;
  for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kZmmTokenBlock) {
    const int64_t t_end = std::min(t0 + kZmmTokenBlock, a.n_tokens);
    int64_t g = g0;
    for (; g + 4 <= g1; g += 4)
      zmm_tokens<Q, 2>(base, tile, g0, g, t0, t_end, group_bytes, t0 == 0);
    if (g + 2 <= g1) {
      zmm_tokens<Q, 1>(base, tile, g0, g, t0, t_end, group_bytes, t0 == 0);
      g += 2;
    }
    if (g < g1) {
      const uint8_t* group = base + (g - g0) * group_bytes;
      int64_t t = t0;
      for (; t + kInterleavedMaxTokens <= t_end; t += kInterleavedMaxTokens)
        group_tokens<Isa, typename Q::Ops, kInterleavedMaxTokens>(group, tile, g, t);
      for (; t < t_end; ++t) group_tokens<Isa, typename Q::Ops, 1>(group, tile, g, t);
    }
  }
}

}  // namespace
}  // namespace tally::cpu::detail::simd
