// The many-token GEMM of the super-block types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS): the one
// unpacked form every type is turned into, and the loop over 16-row groups that unpacks each
// group once per call into per-thread scratch and runs register tiles over it. Shared by the
// 512-bit GEMM (matmul_gemm_kquant_zmm.h) and the 256-bit one (matmul_gemm_kquant_ymm.h); the
// group loop also serves the 32-block types' GEMM (matmul_gemm_block32_zmm.h). Needs AVX2 +
// F16C at compile time (the unpackers are the 256-bit kernels' code).
//
// Unpacked form of a 16-row group, super-block by super-block:
//   quants  [64 chunks][16 rows][4] u8   chunk c = elements 4c..4c+3 of each row, as
//                                        u = weight integer + kOffset (so u8 >= 0)
//   scales  [kSubs][16 rows] int32       the integer scale of each sub-block
//   mterms  [8 pairs][16 rows][2] int16  per 16 elements: the min (Q4_K, Q5_K, Q2_K) or
//                                        kOffset * scale (the others)
//   d, dmin [16 rows] f32
// A 256-bit GEMM reads each 64-byte line of it as two ymm: rows 0-7 and rows 8-15.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_iq4.h"
#include "backend/cpu/matmul_simd_k16.h"
#include "backend/cpu/matmul_simd_quant.h"
#include "tensor/quant_blocks.h"

namespace tally::cpu::detail::simd {
// Internal linkage: this header is compiled into objects with different ISA flags (avx2,
// avx2-vnni, avx512, the emulated test), and a shared template instance would let the linker
// keep any one copy, AVX-512 instructions included, for all of them.
namespace {

// The fewest tokens for which a call takes a GEMM (fewer: the per-row kernels). Either path
// gives the same bits; this is only about speed (docs/performance.md).
inline constexpr int64_t kKGemmMinTokens = 8;
inline constexpr int kKGemmRows = 16;  // rows per unpacked group: one zmm, two ymm

// Q4_K / Q5_K's 8 scales, and their mins once per 16 elements.
[[gnu::always_inline]] static inline void q45k_scales(const uint8_t* packed, int32_t* sc,
                                                      int16_t* mt) {
  for (int j = 0; j < 8; ++j) {
    int s = 0, m = 0;
    q4k_scale_min(packed, j, &s, &m);
    sc[j] = s;
    mt[2 * j] = mt[2 * j + 1] = static_cast<int16_t>(m);
  }
}

// Per type (Q4KGemm ... IQ4XSGemm): quants() writes a super-block's quants as u8 in element
// order, scales() its integer scales and m-terms, d() / dmin() its f32 factors.
//   kSubs: sub-blocks per super-block (8 of 32 elements or 16 of 16)
//   kHasMin: the min-dot is a second float step (q4k_lane_update) rather than an offset
//   kMaxQuant: the largest u8 quants() writes (whether vpmaddubsw pairs could saturate)

// Q4_K and Q5_K share their super-block's header: 8 sub-blocks of 32, 6-bit scales and mins,
// f16 d and dmin. They differ in their quants (Q5_K adds a fifth bit from qh).
template <class B>
struct Q45KHeader {
  using Block = B;
  static constexpr int kSubs = 8;
  static constexpr bool kHasMin = true;
  [[gnu::always_inline]] static inline void scales(const Block& b, int32_t* sc, int16_t* mt) {
    q45k_scales(b.scales, sc, mt);
  }
  static float d(const Block& b) { return f16c_to_f32(b.d); }
  static float dmin(const Block& b) { return f16c_to_f32(b.dmin); }
};

struct Q4KGemm : Q45KHeader<BlockQ4_K> {
  static constexpr int kMaxQuant = 15;
  [[gnu::always_inline]] static inline void quants(const Block& b, uint8_t* u) {
    const __m256i m4 = _mm256_set1_epi8(15);
    for (int g = 0; g < 4; ++g) {  // low nibbles: sub-block 2g, high: 2g+1
      const __m256i q = load_i8x32(b.qs + 32 * g);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 64 * g), _mm256_and_si256(q, m4));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 64 * g + 32),
                          _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
    }
  }
};

struct Q5KGemm : Q45KHeader<BlockQ5_K> {
  static constexpr int kMaxQuant = 31;
  [[gnu::always_inline]] static inline void quants(const Block& b, uint8_t* u) {
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    const __m256i qh = load_i8x32(b.qh);
    for (int g = 0; g < 4; ++g) {  // bit 2g (2g+1) of qh[l] is bit 4 of lo's (hi's) byte l
      const __m256i q = load_i8x32(b.qs + 32 * g);
      const __m256i lo = _mm256_or_si256(
          _mm256_and_si256(q, m4),
          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one), 4));
      const __m256i hi = _mm256_or_si256(
          _mm256_and_si256(_mm256_srli_epi16(q, 4), m4),
          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one), 4));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 64 * g), lo);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 64 * g + 32), hi);
    }
  }
};

struct Q6KGemm {
  using Block = BlockQ6_K;
  static constexpr int kSubs = 16;
  static constexpr bool kHasMin = false;
  static constexpr int kOffset = 32;  // q is the weight + 32
  static constexpr int kMaxQuant = 63;
  [[gnu::always_inline]] static inline void quants(const Block& b, uint8_t* u) {
    for (int h = 0; h < 2; ++h) {
      __m256i q[4];
      q6k_half_quants(b.ql + 64 * h, b.qh + 32 * h, q);
      for (int k = 0; k < 4; ++k)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 128 * h + 32 * k), q[k]);
    }
  }
  [[gnu::always_inline]] static inline void scales(const Block& b, int32_t* sc, int16_t* mt) {
    for (int j = 0; j < 16; ++j) {
      sc[j] = q6k_signed_scale(b, j);
      mt[j] = static_cast<int16_t>(kOffset * sc[j]);
    }
  }
  static float d(const Block& b) { return f16c_to_f32(b.d); }
  static float dmin(const Block&) { return 0.0f; }
};

// Q3_K and Q2_K: quarter k of half h from K16's unpackers (matmul_simd_k16.h).
template <class U>
struct K16Gemm {
  using Block = typename U::Block;
  static constexpr int kSubs = 16;
  static constexpr bool kHasMin = U::kHasMin;
  static constexpr int kMaxQuant = U::kMaxQuant;
  [[gnu::always_inline]] static inline void quants(const Block& b, uint8_t* u) {
    const __m256i hm = U::high_bits(b);
    for (int h = 0; h < 2; ++h) {
      const __m256i qs_h = load_i8x32(b.qs + 32 * h);
      for (int k = 0; k < 4; ++k)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 128 * h + 32 * k),
                            U::quants(qs_h, hm, h, k));
    }
  }
  [[gnu::always_inline]] static inline void scales(const Block& b, int32_t* sc, int16_t* mt) {
    alignas(32) int16_t s[16], m[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(s), U::scales(b));
    _mm256_store_si256(reinterpret_cast<__m256i*>(m), U::mins(b));
    for (int j = 0; j < 16; ++j) {
      sc[j] = s[j];
      mt[j] = kHasMin ? m[j] : static_cast<int16_t>(U::kOffset * s[j]);
    }
  }
  static float d(const Block& b) { return U::d(b); }
  static float dmin(const Block& b) { return U::dmin(b); }
};

struct IQ4XSGemm {
  using Block = BlockIQ4_XS;
  static constexpr int kSubs = 8;
  static constexpr bool kHasMin = false;
  static constexpr int kOffset = 128;  // the grid value (-127..113) + 128
  static constexpr int kMaxQuant = 113 + kOffset;
  [[gnu::always_inline]] static inline void quants(const Block& b, uint8_t* u) {
    for (int j = 0; j < 8; ++j) {
      const __m256i q = iq4_grid(block32_nibbles(b.qs + 16 * j));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 32 * j),
                          _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80))));
    }
  }
  [[gnu::always_inline]] static inline void scales(const Block& b, int32_t* sc, int16_t* mt) {
    for (int j = 0; j < 8; ++j) {
      sc[j] = iq4xs_scale(b, j) - 32;
      mt[2 * j] = mt[2 * j + 1] = static_cast<int16_t>(kOffset * sc[j]);
    }
  }
  static float d(const Block& b) { return f16c_to_f32(b.d); }
  static float dmin(const Block&) { return 0.0f; }
};

// Byte offsets inside one packed super-block of a group.
template <class G>
struct KPacked {
  static constexpr int64_t kQuants = 0;
  static constexpr int64_t kScales = kQKBlock * kKGemmRows;                  // 4096
  static constexpr int64_t kMterms = kScales + G::kSubs * kKGemmRows * 4;
  static constexpr int64_t kD = kMterms + 8 * kKGemmRows * 4;
  static constexpr int64_t kDmin = kD + kKGemmRows * 4;
  static constexpr int64_t kBytes = kDmin + kKGemmRows * 4;
};

// Unpacks rows [row0, row0 + n_rows) (n_rows <= 16; the rest of the group is zeros) into
// dst: nb super-blocks of KPacked<G>::kBytes. Each row's super-block is unpacked to bytes in
// element order, then 16 rows' bytes are transposed by 4-byte words into chunks (Transpose16:
// 16 rows of 64 bytes, src_stride apart, to 16 chunks of 64 bytes, dst word r of chunk c =
// src word c of row r; each ISA's GEMM brings its own).
template <class G, void (*Transpose16)(const uint8_t*, int64_t, uint8_t*)>
void pack_group(const WeightMatrix& w, int64_t row0, int n_rows, uint8_t* dst) {
  using P = KPacked<G>;
  using Block = typename G::Block;
  const int64_t nb = w.n_in / kQKBlock;
  if (n_rows < kKGemmRows) std::memset(dst, 0, static_cast<size_t>(nb * P::kBytes));
  alignas(64) uint8_t u[kKGemmRows][kQKBlock];
  if (n_rows < kKGemmRows) std::memset(u, 0, sizeof u);
  int32_t sc[16];
  int16_t mt[16];
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* p = dst + b * P::kBytes;
    for (int r = 0; r < n_rows; ++r) {
      const Block& blk = reinterpret_cast<const Block*>(w.data + (row0 + r) * w.row_bytes)[b];
      G::quants(blk, u[r]);
      G::scales(blk, sc, mt);
      for (int j = 0; j < G::kSubs; ++j) std::memcpy(p + P::kScales + j * 64 + 4 * r, &sc[j], 4);
      for (int k = 0; k < 8; ++k) std::memcpy(p + P::kMterms + k * 64 + 4 * r, &mt[2 * k], 4);
      const float d = G::d(blk), dmin = G::dmin(blk);
      std::memcpy(p + P::kD + 4 * r, &d, 4);
      std::memcpy(p + P::kDmin + 4 * r, &dmin, 4);
    }
    for (int k = 0; k < kQKBlock / 64; ++k)
      Transpose16(&u[0][64 * k], kQKBlock, p + P::kQuants + 16 * 64 * k);
  }
}

// Tokens [t, t_end) against one unpacked group: T at a time, then T / 2, ..., 1.
template <class F, int T>
[[gnu::always_inline]] static inline void group_tokens(const uint8_t* packed,
                                                       const MatmulTile& tile, int64_t row0,
                                                       int n_rows, int64_t t, int64_t t_end) {
  for (; t + T <= t_end; t += T) F::template tile<T>(packed, tile, row0, n_rows, t);
  if constexpr (T > 1) group_tokens<F, T / 2>(packed, tile, row0, n_rows, t, t_end);
}

// The tile's rows in groups of kKGemmRows, each unpacked once (into scratch of the calling
// thread that only grows) and then run against every token. F, a GEMM's form:
//   group_bytes(w)                           bytes of one unpacked group
//   pack(w, row0, n_rows, dst)               unpacks rows [row0, row0 + n_rows), zeros past them
//   tile<T>(packed, tile, row0, n_rows, t0)  the group against tokens [t0, t0 + T)
//   kTokens                                  the widest register tile (a power of two)
template <class F>
void gemm_row_groups(const MatmulTile& tile) {
  const WeightMatrix& w = *tile.w;
  const int64_t group_bytes = F::group_bytes(w);
  thread_local std::vector<uint8_t> scratch;
  if (static_cast<int64_t>(scratch.size()) < group_bytes)
    scratch.resize(static_cast<size_t>(group_bytes));
  for (int64_t row0 = tile.row_begin; row0 < tile.row_end; row0 += kKGemmRows) {
    const int n_rows = static_cast<int>(std::min<int64_t>(kKGemmRows, tile.row_end - row0));
    F::pack(w, row0, n_rows, scratch.data());
    group_tokens<F, F::kTokens>(scratch.data(), tile, row0, n_rows, 0, tile.acts->n_tokens);
  }
}

// A weight type's tile function: from kKGemmMinTokens tokens on the GEMM of form F, fewer
// tokens through `narrow`, the per-row kernels (the same bits).
template <class F, MatmulTileFn narrow>
void tile_gemm_or_rows(const MatmulTile& tile) {
  if (tile.acts->n_tokens < kKGemmMinTokens) return narrow(tile);
  gemm_row_groups<F>(tile);
}

}  // namespace
}  // namespace tally::cpu::detail::simd
