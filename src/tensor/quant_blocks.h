// Byte layouts of the quantized blocks tally computes with. They are ggml's (GGUF files hold
// them as they are), so each struct must match byte for byte: the static_asserts pin sizes
// and offsets. f16 fields are raw IEEE half bits (tensor/half.h).
//
//   Q8_0  32 values:  d * qs[i]                       qs int8
//   Q4_0  32 values:  d * (q[i] - 8)                  q[i] = qs[i] & 15 (i < 16), qs[i-16] >> 4
//   Q4_K 256 values:  8 sub-blocks of 32, sub-block j = d*sc[j]*q - dmin*m[j], q in 0..15.
//                     qs holds 4 groups of 32 bytes; group g: low nibbles are sub-block 2g,
//                     high nibbles sub-block 2g+1. sc/m are 6-bit, packed in scales[12]
//                     (see q4k_scale_min).
//   Q6_K 256 values:  16 sub-blocks of 16, value = d * scales[j] * (q - 32), q in 0..63:
//                     low 4 bits in ql, high 2 bits in qh (see q6k_quant).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tally {

inline constexpr int kQBlock = 32;    // elements per Q8_0 / Q4_0 block
inline constexpr int kQKBlock = 256;  // elements per K-quant super-block

struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQBlock];
};

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQBlock / 2];
};

struct BlockQ4_K {
  uint16_t d;     // scale of the sub-block scales
  uint16_t dmin;  // scale of the sub-block mins
  uint8_t scales[12];
  uint8_t qs[kQKBlock / 2];
};

struct BlockQ6_K {
  uint8_t ql[kQKBlock / 2];
  uint8_t qh[kQKBlock / 4];
  int8_t scales[kQKBlock / 16];
  uint16_t d;
};

static_assert(sizeof(BlockQ8_0) == 34 && offsetof(BlockQ8_0, qs) == 2);
static_assert(sizeof(BlockQ4_0) == 18 && offsetof(BlockQ4_0, qs) == 2);
static_assert(sizeof(BlockQ4_K) == 144 && offsetof(BlockQ4_K, scales) == 4 &&
              offsetof(BlockQ4_K, qs) == 16);
static_assert(sizeof(BlockQ6_K) == 210 && offsetof(BlockQ6_K, qh) == 128 &&
              offsetof(BlockQ6_K, scales) == 192 && offsetof(BlockQ6_K, d) == 208);

// Q4_K's 12 scale bytes: sub-blocks 0..3 keep scale and min in the low 6 bits of bytes j and
// j+4; sub-blocks 4..7 keep their low 4 bits in the nibbles of byte j+4 and their top 2 bits
// in the spare top bits of bytes j-4 (scale) and j (min).
[[gnu::always_inline]] inline void q4k_scale_min(const uint8_t* scales, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = (scales[j + 4] & 15) | ((scales[j - 4] >> 6) << 4);
    *m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

// The inverse of q4k_scale_min: sc and m are 8 values each in 0..63.
inline void q4k_pack_scales(const uint8_t* sc, const uint8_t* m, uint8_t* scales) {
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}

// Q4_K's 4-bit quant of element i (0..255) of a block.
[[gnu::always_inline]] inline int q4k_quant(const BlockQ4_K& b, int i) {
  const int group = i / 64, within = i % 64;
  const uint8_t byte = b.qs[group * 32 + within % 32];
  return within < 32 ? (byte & 15) : (byte >> 4);
}

// Q6_K's 6-bit quant of element i (0..255) of a block. Each half of 128 elements uses 64 ql
// bytes and 32 qh bytes; its quarter k (32 elements, l = 0..31) takes the low nibble (k < 2)
// or high nibble (k >= 2) of ql[l + 32*(k&1)], and bits 2k..2k+1 of qh[l].
[[gnu::always_inline]] inline int q6k_quant(const BlockQ6_K& b, int i) {
  const int half = i / 128, within = i % 128;
  const int quarter = within / 32, l = within % 32;
  const uint8_t lo_byte = b.ql[half * 64 + (quarter & 1) * 32 + l];
  const int lo = quarter < 2 ? (lo_byte & 15) : (lo_byte >> 4);
  const int hi = (b.qh[half * 32 + l] >> (2 * quarter)) & 3;
  return lo | (hi << 4);
}

}  // namespace tally
