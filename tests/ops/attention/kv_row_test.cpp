// KV rows in their storage type: every ISA path stores tensor/half.h's bits (round to nearest
// even, NaNs quieted, overflow to infinity, subnormals kept) for every row length, writes
// nothing past the row, and loads widen exactly.
#include "backend/cpu/kv_row.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/half.h"
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

// q8_0 / q4_0 rows: every path writes tensor/quantize.h's blocks (ggml's layout), nothing past
// the row, and loads give back the dequantized values.
TEST(KvRow, QuantizedRowsAreTheQuantizersBlocks) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> values(96);
  for (float& x : values) x = normal(rng);
  for (DType t : {DType::kQ8_0, DType::kQ4_0}) {
    const int64_t bytes = dtype_row_bytes(t, 96);
    std::vector<uint8_t> want(bytes);
    quantize_row(t, values.data(), want.data(), 96);
    std::vector<float> want_wide(96);
    dequantize_row(t, want.data(), want_wide.data(), 96);
    for (IsaLevel isa : available_isas()) {
      std::vector<uint8_t> got(bytes + 4, 0xab);
      kv_row_store(isa, t, values.data(), got.data(), 96);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), bytes)) << dtype_name(t) << " " << isa_level_name(isa);
      for (int64_t i = bytes; i < bytes + 4; ++i) ASSERT_EQ(got[i], 0xab) << "wrote past the row";
      std::vector<float> wide(96);
      kv_row_load(t, got.data(), wide.data(), 96);
      EXPECT_EQ(0, std::memcmp(wide.data(), want_wide.data(), 96 * sizeof(float)));
      double err = 0;
      for (int i = 0; i < 96; ++i) err = std::max<double>(err, std::fabs(wide[i] - values[i]));
      EXPECT_LT(err, t == DType::kQ8_0 ? 0.1 : 1.5) << dtype_name(t);
      EXPECT_GT(err, 0.0) << dtype_name(t);
    }
  }
}

TEST(KvRow, EveryPathStoresTheScalarBits) {
  const auto values = test_values(4000);
  for (DType t : {DType::kF16, DType::kBF16})
    for (IsaLevel isa : available_isas()) {
      // Whole row, unaligned start, and every length up to 40 (vector bodies plus tails).
      std::vector<uint16_t> out(values.size() + 1);
      kv_row_store(isa, t, values.data() + 1, out.data() + 1, values.size() - 1);
      for (size_t i = 1; i < values.size(); ++i)
        ASSERT_EQ(out[i], expected(t, values[i]))
            << dtype_name(t) << " " << isa_level_name(isa) << " value " << values[i] << " bits 0x"
            << std::hex << std::bit_cast<uint32_t>(values[i]);
      for (int64_t n = 0; n <= 40; ++n) {
        std::vector<uint16_t> row(n + 3, 0xabcd);
        kv_row_store(isa, t, values.data() + n, row.data(), n);
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
    kv_row_store(isa, DType::kF32, values.data(), out.data(), static_cast<int64_t>(values.size()));
    EXPECT_EQ(0, std::memcmp(out.data(), values.data(), values.size() * sizeof(float)));
  }
}

TEST(KvRow, LoadWidensExactly) {
  // Every 16-bit pattern widens to what half.h says, and (NaNs aside) stores back unchanged.
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> wide(65536);
  for (DType t : {DType::kF16, DType::kBF16}) {
    kv_row_load(t, all.data(), wide.data(), 65536);
    std::vector<uint16_t> back(65536);
    kv_row_store(t, wide.data(), back.data(), 65536);
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
  kv_row_load(DType::kF32, f, g, 3);
  EXPECT_EQ(0, std::memcmp(f, g, sizeof f));
}

}  // namespace
}  // namespace tally::cpu
