// Hand-built blocks (raw bytes, laid out as ggml documents them) decode to known values.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

namespace tally {
namespace {

void put_u16(std::vector<uint8_t>& bytes, size_t at, uint16_t v) {
  bytes[at] = static_cast<uint8_t>(v & 0xff);  // little-endian, as in the files
  bytes[at + 1] = static_cast<uint8_t>(v >> 8);
}

std::vector<float> decode(DType type, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(n, -12345.0f);
  dequantize_row(type, bytes.data(), out.data(), n);
  return out;
}

TEST(Dequantize, Q8_0) {
  std::vector<uint8_t> bytes(2 * 34);
  put_u16(bytes, 0, 0x3800);   // 0.5
  put_u16(bytes, 34, 0xc000);  // -2
  for (int i = 0; i < 32; ++i) {
    bytes[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(i - 16));
    bytes[36 + i] = static_cast<uint8_t>(static_cast<int8_t>(i == 0 ? -128 : 127 - i));
  }
  const auto out = decode(DType::kQ8_0, bytes, 64);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(out[i], 0.5f * (i - 16)) << i;
    EXPECT_EQ(out[32 + i], -2.0f * (i == 0 ? -128 : 127 - i)) << i;
  }
}

TEST(Dequantize, Q4_0LowNibblesFirst) {
  std::vector<uint8_t> bytes(18);
  put_u16(bytes, 0, 0x4000);  // 2
  for (int i = 0; i < 16; ++i) bytes[2 + i] = static_cast<uint8_t>(i | ((15 - i) << 4));
  const auto out = decode(DType::kQ4_0, bytes, 32);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(out[i], 2.0f * (i - 8)) << i;
    EXPECT_EQ(out[16 + i], 2.0f * (15 - i - 8)) << i;
  }
}

// Sub-block scales and mins 4..7 use the top bits of bytes 0..7 (see quant_blocks.h).
constexpr int kQ4kScale[8] = {1, 2, 3, 4, 17, 33, 63, 48};
constexpr int kQ4kMin[8] = {0, 5, 10, 63, 16, 31, 47, 1};
// Packed by hand: bytes 0..3 = sc[j] | (sc[j+4] >> 4) << 6; bytes 4..7 = m[j] | (m[j+4] >> 4)
// << 6; bytes 8..11 = (sc[j+4] & 15) | (m[j+4] & 15) << 4.
constexpr uint8_t kQ4kScaleBytes[12] = {65, 130, 195, 196, 64, 69, 138, 63, 1, 241, 255, 16};

TEST(Dequantize, Q4KScaleUnpacking) {
  for (int j = 0; j < 8; ++j) {
    int sc = -1, m = -1;
    q4k_scale_min(kQ4kScaleBytes, j, &sc, &m);
    EXPECT_EQ(sc, kQ4kScale[j]) << j;
    EXPECT_EQ(m, kQ4kMin[j]) << j;
  }
  uint8_t sc[8], m[8], packed[12];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(kQ4kScale[j]);
    m[j] = static_cast<uint8_t>(kQ4kMin[j]);
  }
  q4k_pack_scales(sc, m, packed);
  EXPECT_EQ(0, std::memcmp(packed, kQ4kScaleBytes, 12));
}

TEST(Dequantize, Q4K) {
  std::vector<uint8_t> bytes(144);
  put_u16(bytes, 0, 0x3c00);  // d = 1
  put_u16(bytes, 2, 0x3800);  // dmin = 0.5
  std::memcpy(&bytes[4], kQ4kScaleBytes, 12);
  // Group g of 32 bytes: low nibble l & 15 (elements 64g + l), high nibble (l + g) & 15
  // (elements 64g + 32 + l).
  for (int g = 0; g < 4; ++g)
    for (int l = 0; l < 32; ++l)
      bytes[16 + g * 32 + l] = static_cast<uint8_t>((l & 15) | (((l + g) & 15) << 4));
  const auto out = decode(DType::kQ4_K, bytes, 256);
  for (int e = 0; e < 256; ++e) {
    const int g = e / 64, w = e % 64, l = w % 32, j = e / 32;
    const int q = w < 32 ? (l & 15) : ((l + g) & 15);
    EXPECT_EQ(out[e], 1.0f * kQ4kScale[j] * q - 0.5f * kQ4kMin[j]) << e;
  }
}

int q6_pattern(int e) { return (e * 7 + 3) % 64; }

TEST(Dequantize, Q6K) {
  const int8_t scales[16] = {-128, 127, -1, 0, 1, 2, 3, -3, 50, -50, 7, 11, 13, 17, 19, 23};
  std::vector<uint8_t> bytes(210);
  // Per half h of 128: ql[64h + l] = q(128h + l) | q(128h + 64 + l) << 4;
  // ql[64h + 32 + l] = q(128h + 32 + l) | q(128h + 96 + l) << 4; qh[32h + l] holds the top
  // two bits of q(128h + l), q(+32), q(+64), q(+96) from low to high.
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int base = 128 * h + l;
      const int q0 = q6_pattern(base), q1 = q6_pattern(base + 32), q2 = q6_pattern(base + 64),
                q3 = q6_pattern(base + 96);
      bytes[64 * h + l] = static_cast<uint8_t>((q0 & 15) | ((q2 & 15) << 4));
      bytes[64 * h + 32 + l] = static_cast<uint8_t>((q1 & 15) | ((q3 & 15) << 4));
      bytes[128 + 32 * h + l] =
          static_cast<uint8_t>((q0 >> 4) | ((q1 >> 4) << 2) | ((q2 >> 4) << 4) | ((q3 >> 4) << 6));
    }
  }
  for (int j = 0; j < 16; ++j) bytes[192 + j] = static_cast<uint8_t>(scales[j]);
  put_u16(bytes, 208, 0x3400);  // d = 0.25
  const auto out = decode(DType::kQ6_K, bytes, 256);
  for (int e = 0; e < 256; ++e)
    EXPECT_EQ(out[e], 0.25f * scales[e / 16] * (q6_pattern(e) - 32)) << e;
}

TEST(Dequantize, PlainTypes) {
  std::vector<uint8_t> f16(4), bf16(4);
  put_u16(f16, 0, 0x3c00);
  put_u16(f16, 2, 0xc500);  // -5
  put_u16(bf16, 0, 0x3f80);
  put_u16(bf16, 2, 0xc0a0);  // -5
  EXPECT_EQ(decode(DType::kF16, f16, 2), (std::vector<float>{1.0f, -5.0f}));
  EXPECT_EQ(decode(DType::kBF16, bf16, 2), (std::vector<float>{1.0f, -5.0f}));
  const float f32[3] = {1.5f, -0.0f, 3e38f};
  std::vector<uint8_t> raw(sizeof(f32));
  std::memcpy(raw.data(), f32, sizeof(f32));
  EXPECT_EQ(decode(DType::kF32, raw, 3), (std::vector<float>{1.5f, -0.0f, 3e38f}));
}

TEST(Dequantize, Conversions) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1,
                  DType::kQ5_0, DType::kQ5_1, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K,
                  DType::kQ5_K, DType::kQ6_K})
    EXPECT_TRUE(dtype_has_row_conversion(t)) << dtype_name(t);
  EXPECT_TRUE(dtype_has_row_conversion(DType::kIQ4_NL));
  EXPECT_TRUE(dtype_has_row_conversion(DType::kIQ4_XS));
  EXPECT_FALSE(dtype_has_row_conversion(DType::kIQ2_XS));
  EXPECT_FALSE(dtype_has_row_conversion(DType::kQ8_K));
}

// The blocks below are packed the way llama.cpp's gguf-py reads them: quant fields as bit
// planes over 32 consecutive elements (bit b of byte l belongs to element 32b + l, or the
// 2-bit field k of byte l to element 32k + l within a half of 128).

int q5_pattern(int e) { return (e * 11 + 5) % 32; }

// Q4_1 / Q5_0 / Q5_1 share the nibble order (low: 0..15, high: 16..31) and qh bit i.
void put_q32_quants(std::vector<uint8_t>& bytes, size_t qh_at, size_t qs_at, int bits) {
  uint32_t qh = 0;
  for (int i = 0; i < 16; ++i)
    bytes[qs_at + i] = static_cast<uint8_t>((q5_pattern(i) & 15) | ((q5_pattern(i + 16) & 15) << 4));
  for (int i = 0; i < 32; ++i) qh |= static_cast<uint32_t>((q5_pattern(i) >> 4) & 1) << i;
  if (bits == 5)
    for (int k = 0; k < 4; ++k) bytes[qh_at + k] = static_cast<uint8_t>(qh >> (8 * k));
}

TEST(Dequantize, Q4_1AndQ5_1AddTheMin) {
  std::vector<uint8_t> q41(20), q51(24);
  put_u16(q41, 0, 0x3800);  // d = 0.5
  put_u16(q41, 2, 0xc000);  // m = -2
  put_q32_quants(q41, 0, 4, 4);
  put_u16(q51, 0, 0x3400);  // d = 0.25
  put_u16(q51, 2, 0x3c00);  // m = 1
  put_q32_quants(q51, 4, 8, 5);
  const auto a = decode(DType::kQ4_1, q41, 32), b = decode(DType::kQ5_1, q51, 32);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(a[i], 0.5f * (q5_pattern(i) & 15) - 2.0f) << i;
    EXPECT_EQ(b[i], 0.25f * q5_pattern(i) + 1.0f) << i;
  }
}

TEST(Dequantize, Q5_0HighBitsFromQh) {
  std::vector<uint8_t> bytes(22);
  put_u16(bytes, 0, 0x4000);  // d = 2
  put_q32_quants(bytes, 2, 6, 5);
  const auto out = decode(DType::kQ5_0, bytes, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], 2.0f * (q5_pattern(i) - 16)) << i;
}

TEST(Dequantize, Q5K) {
  std::vector<uint8_t> bytes(176);
  put_u16(bytes, 0, 0x3c00);  // d = 1
  put_u16(bytes, 2, 0x3800);  // dmin = 0.5
  std::memcpy(&bytes[4], kQ4kScaleBytes, 12);
  for (int e = 0; e < 256; ++e) {
    const int q = (e * 13 + 7) % 32, g = e / 64, w = e % 64;
    bytes[48 + g * 32 + w % 32] |= static_cast<uint8_t>((q & 15) << (w < 32 ? 0 : 4));
    bytes[16 + e % 32] |= static_cast<uint8_t>((q >> 4) << (e / 32));
  }
  const auto out = decode(DType::kQ5_K, bytes, 256);
  for (int e = 0; e < 256; ++e)
    EXPECT_EQ(out[e], 1.0f * kQ4kScale[e / 32] * ((e * 13 + 7) % 32) - 0.5f * kQ4kMin[e / 32]) << e;
}

TEST(Dequantize, Q3K) {
  // 6-bit scales s (the factor is s - 32): low nibbles in bytes 0..7 (j < 8 low, j >= 8 high
  // nibble of byte j - 8), top bits as 2-bit fields of bytes 8..11 (field j / 4 of byte
  // 8 + j % 4).
  const int s[16] = {0, 63, 31, 32, 33, 1, 62, 16, 48, 5, 40, 20, 60, 10, 45, 34};
  std::vector<uint8_t> bytes(110);
  for (int j = 0; j < 16; ++j) {
    bytes[96 + j % 8] |= static_cast<uint8_t>((s[j] & 15) << (j < 8 ? 0 : 4));
    bytes[96 + 8 + j % 4] |= static_cast<uint8_t>((s[j] >> 4) << (2 * (j / 4)));
  }
  for (int e = 0; e < 256; ++e) {
    const int q = (e * 5 + 1) % 8, h = e / 128, k = (e % 128) / 32, l = e % 32;
    bytes[32 + 32 * h + l] |= static_cast<uint8_t>((q & 3) << (2 * k));
    bytes[l] |= static_cast<uint8_t>((q >> 2) << (e / 32));  // hmask
  }
  put_u16(bytes, 108, 0x3400);  // d = 0.25
  const auto out = decode(DType::kQ3_K, bytes, 256);
  for (int e = 0; e < 256; ++e)
    EXPECT_EQ(out[e], 0.25f * (s[e / 16] - 32) * ((e * 5 + 1) % 8 - 4)) << e;
}

TEST(Dequantize, Q2K) {
  std::vector<uint8_t> bytes(84);
  for (int j = 0; j < 16; ++j) bytes[j] = static_cast<uint8_t>(((j * 3) & 15) | ((15 - j) << 4));
  for (int e = 0; e < 256; ++e) {
    const int q = (e * 3 + e / 7) % 4, h = e / 128, k = (e % 128) / 32, l = e % 32;
    bytes[16 + 32 * h + l] |= static_cast<uint8_t>(q << (2 * k));
  }
  put_u16(bytes, 80, 0x4000);  // d = 2
  put_u16(bytes, 82, 0x3800);  // dmin = 0.5
  const auto out = decode(DType::kQ2_K, bytes, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 16;
    EXPECT_EQ(out[e], 2.0f * ((j * 3) & 15) * ((e * 3 + e / 7) % 4) - 0.5f * (15 - j)) << e;
  }
}

// ggml's kvalues_iq4nl, written out here rather than taken from the header under test.
constexpr int kIq4Grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

TEST(Dequantize, IQ4NLUsesTheGrid) {
  std::vector<uint8_t> bytes(18);
  put_u16(bytes, 0, 0x3800);  // d = 0.5
  for (int i = 0; i < 16; ++i) bytes[2 + i] = static_cast<uint8_t>(i | ((15 - i) << 4));
  const auto out = decode(DType::kIQ4_NL, bytes, 32);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(out[i], 0.5f * kIq4Grid[i]) << i;
    EXPECT_EQ(out[16 + i], 0.5f * kIq4Grid[15 - i]) << i;
  }
}

TEST(Dequantize, IQ4XS) {
  // 6-bit scales s (the factor is s - 32): low nibble j % 2 of scales_l[j / 2], top bits
  // 2j..2j+1 of scales_h; sub-block j's 32 codes in qs[16j..16j+15] as IQ4_NL's.
  const int s[8] = {0, 63, 31, 32, 33, 17, 48, 5};
  std::vector<uint8_t> bytes(136);
  put_u16(bytes, 0, 0x3400);  // d = 0.25
  uint16_t scales_h = 0;
  for (int j = 0; j < 8; ++j) {
    bytes[4 + j / 2] |= static_cast<uint8_t>((s[j] & 15) << (4 * (j % 2)));
    scales_h = static_cast<uint16_t>(scales_h | ((s[j] >> 4) << (2 * j)));
  }
  put_u16(bytes, 2, scales_h);
  for (int e = 0; e < 256; ++e) {
    const int code = (e * 7 + e / 32) % 16, j = e / 32, w = e % 32;
    bytes[8 + 16 * j + w % 16] |= static_cast<uint8_t>(code << (w < 16 ? 0 : 4));
  }
  const auto out = decode(DType::kIQ4_XS, bytes, 256);
  for (int e = 0; e < 256; ++e)
    EXPECT_EQ(out[e], 0.25f * (s[e / 32] - 32) * kIq4Grid[(e * 7 + e / 32) % 16]) << e;
}

}  // namespace
}  // namespace tally
