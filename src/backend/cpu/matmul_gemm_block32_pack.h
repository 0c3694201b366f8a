// The unpacked form of the 32-block types with per-row kernels (Q4_1, Q5_0, Q5_1, IQ4_NL) that
// their many-token GEMMs read: the 512-bit one (matmul_gemm_block32_zmm.h) and the 256-bit one
// (matmul_gemm_block32_ymm.h), both run by matmul_gemm_kquant_pack.h's group loop. Needs AVX2
// + F16C at compile time (the unpacking is the 256-bit kernels' Unpack policy,
// matmul_simd_block32.h, matmul_simd_iq4.h). Each group of 16 rows:
//   quants [nb2 blocks][8 chunks][16 rows][4] bytes   chunk c of block b = its elements
//                                                     4c..4c+3 of each row (nb2: the blocks
//                                                     rounded up to even)
//   d      [nb][16 rows] f32
//   m      [nb][16 rows] f32                          Q4_1 / Q5_1 only
// The bytes are the Unpack's quants as they are (Q4_1, Q5_1: 0..15 / 0..31, no offset; Q5_0:
// q, whose weight is q - 16); IQ4_NL's signed grid values go in + 128 (an xor) where the dot is
// vpdpbusd (kSignedAsU8), so a u8 operand always, and stay signed for AVX2's vpmaddubsw, whose
// int16 pairs would saturate on the u8 form (2 * 241 * 127).
// A 64-byte line of 16 rows is one zmm, or two ymm (rows 0-7, 8-15).
#pragma once

#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_gemm_kquant_pack.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_simd_block32.h"
#include "tensor/quant_blocks.h"

namespace tally::cpu::detail::simd {
// Internal linkage, as matmul_gemm_kquant_pack.h.
namespace {

template <class U, bool kSignedAsU8>
struct Block32Form {
  using Block = typename U::Block;
  // Signed weights kept as signed bytes (the dot then takes |w| and x with w's sign).
  static constexpr bool kStoredSigned = U::kSigned && !kSignedAsU8;
  // The stored form's offset: signed weights in u8 go in + 128.
  static constexpr int kOffset = U::kSigned ? (kSignedAsU8 ? 128 : 0) : U::kOffset;
  // kOffset * sum(x) = sums8 << kShift (sums8 = 8 * sum(x)).
  static constexpr int kShift = kOffset == 128 ? 4 : kOffset == 16 ? 1 : 0;
  static_assert(kOffset == 0 || kOffset == 8 << kShift, "offset must be 8 << shift");
  static constexpr int64_t kQuantBytes = kQBlock * kKGemmRows;  // one block of 16 rows: 512

  static int64_t n_blocks2(const WeightMatrix& w) { return (w.n_in / kQBlock + 1) & ~int64_t{1}; }
  static int64_t group_bytes(const WeightMatrix& w) {
    const int64_t nb = w.n_in / kQBlock;
    return n_blocks2(w) * kQuantBytes + nb * kKGemmRows * 4 * (U::kHasMin ? 2 : 1);
  }
  // The group's d (and after them m) of block 0, as f32 [16 rows] per block.
  static const float* scales(const uint8_t* packed, const WeightMatrix& w) {
    return reinterpret_cast<const float*>(packed + n_blocks2(w) * kQuantBytes);
  }

  // Two blocks at a time: 16 rows x 64 bytes, transposed into 16 chunks of 64 bytes by the
  // ISA's Transpose16 (as pack_group's).
  template <void (*Transpose16)(const uint8_t*, int64_t, uint8_t*)>
  static void pack(const WeightMatrix& w, int64_t row0, int n_rows, uint8_t* dst) {
    const int64_t nb = w.n_in / kQBlock;
    if (n_rows < kKGemmRows) std::memset(dst, 0, static_cast<size_t>(group_bytes(w)));
    float* d = reinterpret_cast<float*>(dst + n_blocks2(w) * kQuantBytes);
    float* m = d + nb * kKGemmRows;
    alignas(64) uint8_t u[kKGemmRows][2 * kQBlock];
    std::memset(u, 0, sizeof u);
    for (int64_t b = 0; b < nb; b += 2) {
      for (int r = 0; r < n_rows; ++r) {
        const Block* blocks = reinterpret_cast<const Block*>(w.data + (row0 + r) * w.row_bytes);
        for (int64_t i = b; i < b + 2 && i < nb; ++i) {
          __m256i q = U::quants(blocks[i]);
          if constexpr (U::kSigned && kSignedAsU8)
            q = _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(&u[r][kQBlock * (i - b)]), q);
          d[i * kKGemmRows + r] = f16c_to_f32(blocks[i].d);
          if constexpr (U::kHasMin) m[i * kKGemmRows + r] = f16c_to_f32(blocks[i].m);
        }
      }
      Transpose16(&u[0][0], 2 * kQBlock, dst + b * kQuantBytes);
    }
  }
};

}  // namespace
}  // namespace tally::cpu::detail::simd
