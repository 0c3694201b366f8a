// Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 blocks byte for byte as ggml's quantize_row_*_ref writes
// them (llama-quantize's output without an importance matrix). The expected bytes are worked
// out by hand from ggml's formulas (quantize.h): steps that are exact in f32 (1, -1), so each
// level is plain arithmetic, on the cases where a different rounding would show: ties (roundf
// rounds half away from zero, the +0.5 truncations round half up), the extreme at a negative
// value, the far side clamping, equal magnitudes of both signs, all-zero blocks.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

namespace tally {
namespace {

constexpr uint16_t kF16One = 0x3C00, kF16MinusOne = 0xBC00;

template <typename Block>
Block quantize_block(DType type, const std::array<float, 32>& x) {
  Block b{};
  std::memset(&b, 0xAB, sizeof b);  // every byte must be written
  quantize_row(type, x.data(), &b, 32);
  return b;
}

// qs[j] = q[j] | q[j + 16] << 4 for the 4-bit part of levels q[32].
std::array<uint8_t, 16> nibbles(const std::array<int, 32>& q) {
  std::array<uint8_t, 16> qs{};
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4));
  return qs;
}

template <size_t N>
void expect_bytes(const uint8_t* got, const std::array<uint8_t, N>& want) {
  for (size_t i = 0; i < N; ++i) EXPECT_EQ(got[i], want[i]) << "byte " << i;
}

TEST(QuantizeGgml, Q8_0RoundsHalfAwayFromZero) {
  std::array<float, 32> x{};
  x[0] = 127.0f;  // amax 127: d = 1
  x[1] = 2.5f;    // roundf: 3 (nearest-even would give 2)
  x[2] = -2.5f;   // -3
  x[3] = 0.5f;    // 1
  x[4] = -0.49f;  // 0
  x[5] = -127.0f;
  const auto b = quantize_block<BlockQ8_0>(DType::kQ8_0, x);
  EXPECT_EQ(b.d, kF16One);
  const std::array<int, 6> want = {127, 3, -3, 1, 0, -127};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(b.qs[i], want[i]) << i;
  for (int i = 6; i < 32; ++i) EXPECT_EQ(b.qs[i], 0) << i;
}

TEST(QuantizeGgml, Q8_0AllZero) {
  const auto b = quantize_block<BlockQ8_0>(DType::kQ8_0, {});
  EXPECT_EQ(b.d, 0);
  for (int8_t q : b.qs) EXPECT_EQ(q, 0);
}

TEST(QuantizeGgml, Q4_0ExtremeAtANegativeValue) {
  std::array<float, 32> x{};
  x[0] = -8.0f;   // the extreme: d = -8 / -8 = 1, level 0
  x[1] = 4.0f;    // 4 + 8.5 = 12.5 -> 12
  x[2] = 0.5f;    // 9.0 -> 9: ties round up
  x[3] = -0.5f;   // 8.0 -> 8
  x[4] = 7.5f;    // 16 -> clamped to 15
  x[5] = 7.0f;    // 15
  x[6] = -7.5f;   // 1
  x[16] = 8.0f;   // same magnitude as x[0]: the first stays the extreme; 16.5 -> 15
  x[17] = -3.0f;  // 5
  const auto b = quantize_block<BlockQ4_0>(DType::kQ4_0, x);
  EXPECT_EQ(b.d, kF16One);
  std::array<int, 32> q;
  q.fill(8);
  q[0] = 0, q[1] = 12, q[2] = 9, q[3] = 8, q[4] = 15, q[5] = 15, q[6] = 1, q[16] = 15, q[17] = 5;
  expect_bytes(b.qs, nibbles(q));
  EXPECT_EQ(b.qs[0], 0xF0);  // the packing spelled out once
  EXPECT_EQ(b.qs[1], 0x5C);
}

TEST(QuantizeGgml, Q4_0ExtremeAtAPositiveValueGivesANegativeScale) {
  std::array<float, 32> x{};
  x[0] = 8.0f;   // d = 8 / -8 = -1: 8 maps to level 0
  x[1] = -8.0f;  // 16.5 -> clamped to 15
  x[2] = 1.0f;   // -1 + 8.5 -> 7
  const auto b = quantize_block<BlockQ4_0>(DType::kQ4_0, x);
  EXPECT_EQ(b.d, kF16MinusOne);
  std::array<int, 32> q;
  q.fill(8);
  q[0] = 0, q[1] = 15, q[2] = 7;
  expect_bytes(b.qs, nibbles(q));
}

TEST(QuantizeGgml, Q4_0AllZero) {
  const auto b = quantize_block<BlockQ4_0>(DType::kQ4_0, {});
  EXPECT_EQ(b.d, 0x8000);  // d = 0 / -8 = -0: ggml stores the sign too
  for (uint8_t v : b.qs) EXPECT_EQ(v, 0x88);
}

TEST(QuantizeGgml, Q4_1MinimumIsLevelZero) {
  std::array<float, 32> x;
  x.fill(-1.0f);   // min -1, max 14: d = 15 / 15 = 1, m = -1
  x[1] = 14.0f;    // 15
  x[2] = -0.5f;    // 0.5 + 0.5 = 1.0 -> 1
  x[3] = 0.0f;     // 1.5 -> 1
  x[4] = 13.4f;    // 14.9 -> 14
  const auto b = quantize_block<BlockQ4_1>(DType::kQ4_1, x);
  EXPECT_EQ(b.d, kF16One);
  EXPECT_EQ(b.m, kF16MinusOne);
  std::array<int, 32> q{};
  q[1] = 15, q[2] = 1, q[3] = 1, q[4] = 14;
  expect_bytes(b.qs, nibbles(q));
}

TEST(QuantizeGgml, Q4_1AllZero) {
  const auto b = quantize_block<BlockQ4_1>(DType::kQ4_1, {});
  EXPECT_EQ(b.d, 0);
  EXPECT_EQ(b.m, 0);
  for (uint8_t v : b.qs) EXPECT_EQ(v, 0);
}

TEST(QuantizeGgml, Q5_0FifthBitsInQh) {
  std::array<float, 32> x{};
  x[0] = -16.0f;   // d = 1; level 0
  x[1] = 15.0f;    // 31
  x[2] = 0.5f;     // 17.0 -> 17
  x[3] = -0.5f;    // 16
  x[16] = 16.0f;   // 32.5 -> clamped to 31
  x[17] = -15.6f;  // 0.9 -> 0
  const auto b = quantize_block<BlockQ5_0>(DType::kQ5_0, x);
  EXPECT_EQ(b.d, kF16One);
  std::array<int, 32> q;
  q.fill(16);
  q[0] = 0, q[1] = 31, q[2] = 17, q[3] = 16, q[16] = 31, q[17] = 0;
  expect_bytes(b.qs, nibbles(q));
  // Bit i = bit 4 of level i: all set but levels 0 and 17's.
  expect_bytes(b.qh, std::array<uint8_t, 4>{0xFE, 0xFF, 0xFD, 0xFF});
}

TEST(QuantizeGgml, Q5_1LevelsAndHighBits) {
  std::array<float, 32> x;
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i);  // min 0, max 31: d = 1
  const auto b = quantize_block<BlockQ5_1>(DType::kQ5_1, x);
  EXPECT_EQ(b.d, kF16One);
  EXPECT_EQ(b.m, 0);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], j | (j << 4)) << j;
  expect_bytes(b.qh, std::array<uint8_t, 4>{0x00, 0x00, 0xFF, 0xFF});
}

// The step is x times the f32 inverse of the f32 step, not x divided by the stored f16 step:
// with amax 1, d = 1/127 (f16 0x2008 rounds it), and 0.3 lands on roundf(0.3 * (1 / d)).
TEST(QuantizeGgml, Q8_0ScalesByTheF32Inverse) {
  std::array<float, 32> x{};
  x[0] = 1.0f;
  x[1] = 0.3f;
  const auto b = quantize_block<BlockQ8_0>(DType::kQ8_0, x);
  const float d = 1.0f / 127.0f;
  const float id = 1.0f / d;
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], static_cast<int8_t>(std::round(0.3f * id)));
  EXPECT_EQ(b.d, 0x2008);
}

}  // namespace
}  // namespace tally
