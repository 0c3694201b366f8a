// KV rows in their storage type: every ISA path stores tensor/half.h's bits (round to nearest
// even, NaNs quieted, overflow to infinity, subnormals kept) for every row length, writes
// nothing past the row, and loads widen exactly; q8_0 / q4_0 rows are ggml's blocks of 32 for
// heads of 32 values and more, one short block a head (its own scale) under 32.
#include "backend/cpu/kv_row.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/half.h"
#include "tensor/kv_types.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

namespace tally::cpu {
namespace {

std::vector<IsaLevel> available_isas() {
  std::vector<IsaLevel> out;
  for (IsaLevel l : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512})
    if (l <= cpu_isa_level()) out.push_back(l);
  return out;
}

float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

// Values where rounding is delicate, then random ones over many magnitudes.
std::vector<float> test_values(size_t n_random) {
  std::vector<float> v = {
      0.0f,
      -0.0f,
      1.0f,
      -1.0f,
      INFINITY,
      -INFINITY,
      from_bits(0x7fc00000),
      from_bits(0xffc00001),  // quiet NaNs
      from_bits(0x7f800001),
      from_bits(0x7fa00000),  // signaling NaNs
      from_bits(0x7fffffff),
      from_bits(0x7f7fffff),  // NaN with full payload, max float
      65504.0f,
      65519.99f,
      65520.0f,
      -65520.0f,  // f16 max, below and at the overflow tie
      0x1p-14f,
      0x1p-24f,
      0x1p-25f,
      0x3p-25f,
      0x1p-26f,
      0x1.ffcp-15f,  // f16 subnormal edges
      from_bits(0x00000001),
      from_bits(0x807fffff),  // f32 subnormals
      from_bits(0x3f808000),
      from_bits(0x3f818000),  // bf16 ties: to even down, up
      from_bits(0x3f808001),
      from_bits(0x3f807fff),  // just above / below a bf16 tie
      1.0f + 0x1p-11f,
      1.0f + 0x3p-11f,  // f16 ties
      from_bits(0x7f7f8000),
      from_bits(0xff7f8000),  // bf16 ties that round to infinity
  };
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> bits;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t i = 0; i < n_random; ++i) {
    if (i % 2) {
      v.push_back(from_bits(bits(rng)));  // any bit pattern
    } else {
      v.push_back(normal(rng) * std::ldexp(1.0f, static_cast<int>(i % 40) - 28));
    }
  }
  return v;
}

uint16_t expected(DType t, float x) { return t == DType::kF16 ? f32_to_f16(x) : f32_to_bf16(x); }

TEST(KvRow, SupportedTypes) {
  EXPECT_TRUE(kv_type_supported(DType::kF32));
  EXPECT_TRUE(kv_type_supported(DType::kF16));
  EXPECT_TRUE(kv_type_supported(DType::kBF16));
  EXPECT_TRUE(kv_type_supported(DType::kQ8_0));
  EXPECT_TRUE(kv_type_supported(DType::kQ4_0));
  EXPECT_FALSE(kv_type_supported(DType::kQ4_K));
  EXPECT_FALSE(kv_type_supported(DType::kI8));
}

// q8_0 / q4_0 rows of heads of 32 values and more: every path writes tensor/quantize.h's
// blocks (ggml's layout, bytes as before heads under 32 had blocks of their own), nothing past
// the row, and loads give back the dequantized values.
TEST(KvRow, QuantizedRowsAreTheQuantizersBlocks) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> values(96);
  for (float& x : values) x = normal(rng);
  for (DType t : {DType::kQ8_0, DType::kQ4_0})
    for (int64_t head_dim : {32, 96}) {
      const int64_t bytes = dtype_row_bytes(t, 96);
      ASSERT_EQ(kv_row_bytes(t, 96 / head_dim, head_dim), bytes);
      std::vector<uint8_t> want(bytes);
      quantize_row(t, values.data(), want.data(), 96);
      std::vector<float> want_wide(96);
      dequantize_row(t, want.data(), want_wide.data(), 96);
      for (IsaLevel isa : available_isas()) {
        std::vector<uint8_t> got(bytes + 4, 0xab);
        kv_row_store(isa, t, values.data(), got.data(), 96, head_dim);
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), bytes)) << dtype_name(t) << " " << isa_level_name(isa);
        for (int64_t i = bytes; i < bytes + 4; ++i) ASSERT_EQ(got[i], 0xab) << "wrote past the row";
        std::vector<float> wide(96);
        kv_row_load(t, got.data(), wide.data(), 96, head_dim);
        EXPECT_EQ(0, std::memcmp(wide.data(), want_wide.data(), 96 * sizeof(float)));
        double err = 0;
        for (int i = 0; i < 96; ++i) err = std::max<double>(err, std::fabs(wide[i] - values[i]));
        EXPECT_LT(err, t == DType::kQ8_0 ? 0.1 : 1.5) << dtype_name(t);
        EXPECT_GT(err, 0.0) << dtype_name(t);
      }
    }
}

// Heads under 32 values: one short block each (2 + head_dim bytes for q8_0, 2 + head_dim / 2
// for q4_0), rounded exactly as a block of 32 holding the head and zeros (zeros move neither
// the largest value nor the extreme), on every path; loads give those values back.
TEST(KvRow, ShortHeadsAreOneBlockEach) {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (DType t : {DType::kQ8_0, DType::kQ4_0})
    for (int64_t hd : {4, 8, 16}) {
      const int64_t n_heads = 4, n = n_heads * hd;
      std::vector<float> values(n);
      for (float& x : values) x = normal(rng);
      const int64_t block = t == DType::kQ8_0 ? 2 + hd : 2 + hd / 2;
      ASSERT_EQ(kv_row_bytes(t, n_heads, hd), n_heads * block) << dtype_name(t) << " " << hd;
      std::vector<uint8_t> want(n_heads * block);
      std::vector<float> want_wide(n);
      for (int64_t h = 0; h < n_heads; ++h) {
        float padded[kQBlock] = {};
        std::copy_n(values.data() + h * hd, hd, padded);
        std::vector<uint8_t> b32(dtype_row_bytes(t, kQBlock));
        quantize_row(t, padded, b32.data(), kQBlock);
        float wide32[kQBlock];
        dequantize_row(t, b32.data(), wide32, kQBlock);
        std::copy_n(wide32, hd, want_wide.data() + h * hd);
        std::memcpy(want.data() + h * block, b32.data(), 2);  // the scale
        for (int64_t i = 0; i < hd; ++i) {
          uint8_t* qs = want.data() + h * block + 2;
          if (t == DType::kQ8_0) {
            qs[i] = b32[2 + i];
          } else {  // value i of the 32-block is the low nibble of byte i (i < 16)
            const uint8_t q = b32[2 + i] & 15;
            qs[i % (hd / 2)] |= static_cast<uint8_t>(i < hd / 2 ? q : q << 4);
          }
        }
      }
      for (IsaLevel isa : available_isas()) {
        std::vector<uint8_t> got(want.size() + 4, 0xab);
        kv_row_store(isa, t, values.data(), got.data(), n, hd);
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size()))
            << dtype_name(t) << " head_dim " << hd << " " << isa_level_name(isa);
        for (size_t i = want.size(); i < got.size(); ++i) ASSERT_EQ(got[i], 0xab) << "wrote past the row";
        std::vector<float> wide(n);
        kv_row_load(t, got.data(), wide.data(), n, hd);
        ASSERT_EQ(0, std::memcmp(wide.data(), want_wide.data(), n * sizeof(float))) << dtype_name(t) << " " << hd;
      }
    }
}

// The layout of a short block, by hand: q8_0's levels in order; q4_0's value j < n/2 in the
// low nibble of byte j, the rest in the high nibbles.
TEST(KvRow, ShortBlockLayout) {
  const float x[8] = {-8, 1, 2, 3, 4, 5, 6, 7};  // q4_0: extreme -8, so d = 1, level x + 8
  uint8_t q4[2 + 4];
  kv_row_store(IsaLevel::kScalar, DType::kQ4_0, x, q4, 8, 8);
  EXPECT_EQ(q4[0] | q4[1] << 8, f32_to_f16(1.0f));
  EXPECT_EQ(q4[2], 0xc0);  // 0 | 12 << 4
  EXPECT_EQ(q4[3], 0xd9);
  EXPECT_EQ(q4[4], 0xea);
  EXPECT_EQ(q4[5], 0xfb);
  const float y[4] = {127, -1, 2, -127};  // q8_0: d = 1, levels the values
  uint8_t q8[2 + 4];
  kv_row_store(IsaLevel::kScalar, DType::kQ8_0, y, q8, 4, 4);
  EXPECT_EQ(q8[0] | q8[1] << 8, f32_to_f16(1.0f));
  EXPECT_EQ(static_cast<int8_t>(q8[2]), 127);
  EXPECT_EQ(static_cast<int8_t>(q8[3]), -1);
  EXPECT_EQ(static_cast<int8_t>(q8[4]), 2);
  EXPECT_EQ(static_cast<int8_t>(q8[5]), -127);
}

// Each head keeps its own scale: a head of tiny values next to heads of large ones is stored
// to its own precision (in a block of 32 shared with them it would round to zeros).
TEST(KvRow, ShortHeadsKeepTheirOwnPrecision) {
  for (DType t : {DType::kQ8_0, DType::kQ4_0})
    for (int64_t hd : {4, 8, 16}) {
      const int64_t n = 4 * hd;
      std::vector<float> values(n);
      for (int64_t i = 0; i < n; ++i) values[i] = (i < hd ? 1e-3f : 100.0f) * (1 + i % 3) * (i % 2 ? 1 : -1);
      std::vector<uint8_t> bytes(kv_row_bytes(t, 4, hd));
      kv_row_store(t, values.data(), bytes.data(), n, hd);
      std::vector<float> wide(n);
      kv_row_load(t, bytes.data(), wide.data(), n, hd);
      // Half a step of each head's largest value (plus the f16 rounding of the scale) for
      // q8_0; q4_0 clamps the far side of its extreme at 7 steps: up to a whole step.
      const double tol = t == DType::kQ8_0 ? 0.6 / 127 : 1.01 / 8;
      for (int64_t i = 0; i < n; ++i) {
        const double head_max = i < hd ? 3e-3 : 300.0;
        EXPECT_LE(std::fabs(wide[i] - values[i]), tol * head_max)
            << dtype_name(t) << " head_dim " << hd << " i " << i << " " << values[i] << " -> " << wide[i];
      }
      EXPECT_NE(wide[0], 0.0f);
    }
}

TEST(KvRow, EveryPathStoresTheScalarBits) {
  const auto values = test_values(4000);
  for (DType t : {DType::kF16, DType::kBF16})
    for (IsaLevel isa : available_isas()) {
      // Whole row, unaligned start, and every length up to 40 (vector bodies plus tails).
      std::vector<uint16_t> out(values.size() + 1);
      kv_row_store(isa, t, values.data() + 1, out.data() + 1, values.size() - 1, 1);
      for (size_t i = 1; i < values.size(); ++i)
        ASSERT_EQ(out[i], expected(t, values[i]))
            << dtype_name(t) << " " << isa_level_name(isa) << " value " << values[i] << " bits 0x"
            << std::hex << std::bit_cast<uint32_t>(values[i]);
      for (int64_t n = 0; n <= 40; ++n) {
        std::vector<uint16_t> row(n + 3, 0xabcd);
        kv_row_store(isa, t, values.data() + n, row.data(), n, 1);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(row[i], expected(t, values[n + i])) << "n=" << n << " i=" << i;
        for (int64_t i = n; i < n + 3; ++i) ASSERT_EQ(row[i], 0xabcd) << "wrote past n=" << n;
      }
    }
}

TEST(KvRow, F32StoresAsIs) {
  const auto values = test_values(100);
  for (IsaLevel isa : available_isas()) {
    std::vector<float> out(values.size());
    kv_row_store(isa, DType::kF32, values.data(), out.data(), static_cast<int64_t>(values.size()), 1);
    EXPECT_EQ(0, std::memcmp(out.data(), values.data(), values.size() * sizeof(float)));
  }
}

TEST(KvRow, LoadWidensExactly) {
  // Every 16-bit pattern widens to what half.h says, and (NaNs aside) stores back unchanged.
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> wide(65536);
  for (DType t : {DType::kF16, DType::kBF16}) {
    kv_row_load(t, all.data(), wide.data(), 65536, 1);
    std::vector<uint16_t> back(65536);
    kv_row_store(t, wide.data(), back.data(), 65536, 1);
    for (uint32_t i = 0; i < 65536; ++i) {
      const float want = t == DType::kF16 ? f16_to_f32(all[i]) : bf16_to_f32(all[i]);
      ASSERT_EQ(std::bit_cast<uint32_t>(wide[i]), std::bit_cast<uint32_t>(want)) << i;
      if (!std::isnan(wide[i])) {
        ASSERT_EQ(back[i], all[i]) << dtype_name(t) << " " << i;
      }
    }
  }
  const float f[3] = {1.5f, -2.0f, 3e-40f};
  float g[3];
  kv_row_load(DType::kF32, f, g, 3, 1);
  EXPECT_EQ(0, std::memcmp(f, g, sizeof f));
}

}  // namespace
}  // namespace tally::cpu
