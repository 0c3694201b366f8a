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
//   Q4_1  32 values:  d * q + m                       q as Q4_0's nibbles, q in 0..15
//   Q5_0  32 values:  d * (q - 16)                    q = Q4_0's nibble | bit i of qh << 4
//   Q5_1  32 values:  d * q + m                       q as Q5_0's, q in 0..31
//   Q5_K 256 values:  Q4_K's sub-blocks, scales and nibbles, q in 0..31: bit 4 of element i
//                     is bit i/32 of qh[i % 32]
//   Q3_K 256 values:  16 sub-blocks of 16, value = d * (s[j] - 32) * (q - 4), q in 0..7:
//                     low 2 bits as Q2_K's, bit 2 is bit i/32 of hmask[i % 32]; s 6-bit
//                     packed in scales[12] (see q3k_scale)
//   Q2_K 256 values:  16 sub-blocks of 16, value = d * (scales[j] & 15) * q -
//                     dmin * (scales[j] >> 4), q in 0..3 (see k_quant_2bits)
//   IQ4_NL 32 values: d * kIq4Values[q], q as Q4_0's nibbles (a non-linear 4-bit grid)
//   IQ4_XS 256 values: 8 sub-blocks of 32, value = d * (s[j] - 32) * kIq4Values[q]: sub-block
//                     j's nibbles are qs[16j..16j+15] as in IQ4_NL; s 6-bit (see iq4xs_scale)
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

struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQBlock / 2];
};

struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // bit i: bit 4 of element i (a little-endian uint32)
  uint8_t qs[kQBlock / 2];
};

struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQBlock / 2];
};

struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];        // as Q4_K's
  uint8_t qh[kQKBlock / 8];  // bit 4 of the quants
  uint8_t qs[kQKBlock / 2];  // low 4 bits, as Q4_K's
};

struct BlockQ3_K {
  uint8_t hmask[kQKBlock / 8];  // bit 2 of the quants
  uint8_t qs[kQKBlock / 4];     // low 2 bits
  uint8_t scales[12];
  uint16_t d;
};

struct BlockQ2_K {
  uint8_t scales[kQKBlock / 16];  // low nibble: scale, high nibble: min
  uint8_t qs[kQKBlock / 4];
  uint16_t d;
  uint16_t dmin;
};

struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQBlock / 2];
};

struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;  // top 2 bits of scale j at bits 2j..2j+1
  uint8_t scales_l[kQKBlock / 64];  // low 4 bits of scale j: nibble j % 2 of byte j / 2
  uint8_t qs[kQKBlock / 2];
};

// The 16 values of IQ4_NL / IQ4_XS's 4-bit codes (ggml's kvalues_iq4nl).
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

static_assert(sizeof(BlockQ8_0) == 34 && offsetof(BlockQ8_0, qs) == 2);
static_assert(sizeof(BlockQ4_0) == 18 && offsetof(BlockQ4_0, qs) == 2);

// A Q8_0 / Q4_0 block of n < 32 values in the same shape (n divides 32, even for Q4_0): the
// f16 d, then n int8 levels (Q8_0), or n/2 bytes with value j < n/2 in the low nibble of byte
// j and value j >= n/2 in the high nibble of byte j - n/2 (Q4_0). The KV cache stores a head of
// fewer than 32 values as one such block, so each head has a scale of its own (kv_types.h).
// n = 32 is BlockQ8_0 / BlockQ4_0. d may be unaligned (memcpy it).
constexpr int64_t q8_0_block_bytes(int64_t n) { return static_cast<int64_t>(sizeof(uint16_t)) + n; }
constexpr int64_t q4_0_block_bytes(int64_t n) { return static_cast<int64_t>(sizeof(uint16_t)) + n / 2; }
static_assert(q8_0_block_bytes(kQBlock) == sizeof(BlockQ8_0));
static_assert(q4_0_block_bytes(kQBlock) == sizeof(BlockQ4_0));
static_assert(sizeof(BlockQ4_K) == 144 && offsetof(BlockQ4_K, scales) == 4 &&
              offsetof(BlockQ4_K, qs) == 16);
static_assert(sizeof(BlockQ6_K) == 210 && offsetof(BlockQ6_K, qh) == 128 &&
              offsetof(BlockQ6_K, scales) == 192 && offsetof(BlockQ6_K, d) == 208);
static_assert(sizeof(BlockQ4_1) == 20 && offsetof(BlockQ4_1, qs) == 4);
static_assert(sizeof(BlockQ5_0) == 22 && offsetof(BlockQ5_0, qh) == 2 &&
              offsetof(BlockQ5_0, qs) == 6);
static_assert(sizeof(BlockQ5_1) == 24 && offsetof(BlockQ5_1, qh) == 4 &&
              offsetof(BlockQ5_1, qs) == 8);
static_assert(sizeof(BlockQ5_K) == 176 && offsetof(BlockQ5_K, scales) == 4 &&
              offsetof(BlockQ5_K, qh) == 16 && offsetof(BlockQ5_K, qs) == 48);
static_assert(sizeof(BlockQ3_K) == 110 && offsetof(BlockQ3_K, qs) == 32 &&
              offsetof(BlockQ3_K, scales) == 96 && offsetof(BlockQ3_K, d) == 108);
static_assert(sizeof(BlockIQ4_NL) == 18 && offsetof(BlockIQ4_NL, qs) == 2);
static_assert(sizeof(BlockIQ4_XS) == 136 && offsetof(BlockIQ4_XS, scales_l) == 4 &&
              offsetof(BlockIQ4_XS, qs) == 8);
static_assert(sizeof(BlockQ2_K) == 84 && offsetof(BlockQ2_K, qs) == 16 &&
              offsetof(BlockQ2_K, d) == 80 && offsetof(BlockQ2_K, dmin) == 82);

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

// The 4-bit quant of element i (0..31) of a 32-block (Q4_0, Q4_1, Q5_0, Q5_1): the low
// nibbles hold elements 0..15, the high nibbles 16..31.
[[gnu::always_inline]] inline int q32_nibble(const uint8_t* qs, int i) {
  return i < kQBlock / 2 ? (qs[i] & 15) : (qs[i - kQBlock / 2] >> 4);
}

// Bit 4 of element i (0..31) of a Q5_0 / Q5_1 block, as 0 or 16.
[[gnu::always_inline]] inline int q5_high(const uint8_t* qh, int i) {
  return ((qh[i / 8] >> (i % 8)) & 1) << 4;
}

// Q5_K's 5-bit quant of element i (0..255): Q4_K's nibble plus the qh bit.
[[gnu::always_inline]] inline int q5k_quant(const BlockQ5_K& b, int i) {
  const int group = i / 64, within = i % 64;
  const uint8_t byte = b.qs[group * 32 + within % 32];
  const int lo = within < 32 ? (byte & 15) : (byte >> 4);
  return lo | (((b.qh[i % 32] >> (i / 32)) & 1) << 4);
}

// The 2-bit field of element i (0..255) in Q2_K / Q3_K's qs: each half of 128 elements uses
// 32 bytes; its quarter k (32 elements, l = 0..31) is bits 2k..2k+1 of qs[32*half + l].
[[gnu::always_inline]] inline int k_quant_2bits(const uint8_t* qs, int i) {
  return (qs[(i / 128) * 32 + i % 32] >> (2 * ((i % 128) / 32))) & 3;
}

// Q3_K's 3-bit quant of element i, 0..7 (the value's factor is q - 4).
[[gnu::always_inline]] inline int q3k_quant(const BlockQ3_K& b, int i) {
  return k_quant_2bits(b.qs, i) | (((b.hmask[i % 32] >> (i / 32)) & 1) << 2);
}

// Q3_K's 6-bit scale j (0..15), 0..63 (the factor is s - 32): the low 4 bits are the low
// (j < 8) or high (j >= 8) nibble of scales[j % 8]; the top 2 bits are bits 2*(j/4)..+1 of
// scales[8 + j % 4].
[[gnu::always_inline]] inline int q3k_scale(const uint8_t* scales, int j) {
  const int lo = j < 8 ? (scales[j] & 15) : (scales[j - 8] >> 4);
  const int hi = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return lo | (hi << 4);
}

// The signed factors of sub-block j's scale (Q6_K's int8, Q3_K's s - 32).
[[gnu::always_inline]] inline int q6k_signed_scale(const BlockQ6_K& b, int j) {
  return b.scales[j];
}
[[gnu::always_inline]] inline int q3k_signed_scale(const BlockQ3_K& b, int j) {
  return q3k_scale(b.scales, j) - 32;
}

// The inverse of q3k_scale: s holds 16 values in 0..63.
inline void q3k_pack_scales(const uint8_t* s, uint8_t* scales) {
  for (int j = 0; j < 12; ++j) scales[j] = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j % 8] = static_cast<uint8_t>(scales[j % 8] | ((s[j] & 15) << (j < 8 ? 0 : 4)));
    scales[8 + j % 4] = static_cast<uint8_t>(scales[8 + j % 4] | ((s[j] >> 4) << (2 * (j / 4))));
  }
}

// IQ4_XS's 6-bit scale of sub-block j (0..7), 0..63 (the factor is s - 32).
[[gnu::always_inline]] inline int iq4xs_scale(const BlockIQ4_XS& b, int j) {
  return ((b.scales_l[j / 2] >> (4 * (j % 2))) & 15) | (((b.scales_h >> (2 * j)) & 3) << 4);
}

}  // namespace tally
