#include "tensor/half.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

namespace tally {
namespace {

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

TEST(Half, F16ToF32SpecialValues) {
  EXPECT_EQ(bits(f16_to_f32(0x0000)), 0x00000000u);
  EXPECT_EQ(bits(f16_to_f32(0x8000)), 0x80000000u);  // -0 keeps its sign
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x83ff), -1023 * std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_to_f32(0x7c00), INFINITY);
  EXPECT_EQ(f16_to_f32(0xfc00), -INFINITY);
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7c01)));  // signalling NaN stays a NaN
}

TEST(Half, F16RoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
      EXPECT_TRUE(std::isnan(f)) << h;
      const uint16_t back = f32_to_f16(f);
      EXPECT_EQ(back & 0x7c00, 0x7c00) << h;
      EXPECT_NE(back & 0x3ff, 0) << h;
      EXPECT_EQ(back & 0x8000, h & 0x8000) << h;
    } else {
      EXPECT_EQ(f32_to_f16(f), h) << h;
    }
  }
}

TEST(Half, F32ToF16RoundsToNearestEven) {
  const float one = 1.0f, ulp = std::ldexp(1.0f, -10);
  EXPECT_EQ(f32_to_f16(one + ulp / 2), 0x3c00);      // tie, 1.0 is even
  EXPECT_EQ(f32_to_f16(one + 3 * ulp / 2), 0x3c02);  // tie, rounds up to even
  EXPECT_EQ(f32_to_f16(std::nextafter(one + ulp / 2, 2.0f)), 0x3c01);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // tie between 65504 and 2^16: to infinity
  EXPECT_EQ(f32_to_f16(-1e10f), 0xfc00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie with zero
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f32_to_f16(3 * std::ldexp(1.0f, -25)), 0x0002);  // tie between 1 and 2 units
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)), 0x0400);  // to normal
  EXPECT_EQ(f32_to_f16(1e-30f), 0x0000);
  EXPECT_EQ(f32_to_f16(from_bits(0x00000001)), 0x0000);  // f32 subnormal
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7c00);
  EXPECT_EQ(f32_to_f16(from_bits(0x7f800001)) & 0x7e00, 0x7e00);  // quiet NaN
}

// Brute-force nearest-even in double: the check does not share the tested bit arithmetic.
uint16_t nearest_f16(float f) {
  const double v = f;
  uint16_t best = 0;
  double best_err = INFINITY;
  // Every finite half of f's sign, searched near the candidate magnitude.
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const double err =
        std::fabs(std::fabs(v) - static_cast<double>(f16_to_f32(static_cast<uint16_t>(h))));
    if (err < best_err || (err == best_err && (h & 1) == 0)) {
      best_err = err;
      best = static_cast<uint16_t>(h);
    }
  }
  // Past 65520 the nearest-even result is infinity.
  if (std::fabs(v) >= 65520.0) return sign | 0x7c00;
  return sign | best;
}

TEST(Half, F32ToF16MatchesBruteForce) {
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    // Exponents across the whole f16 range, subnormals included.
    const float f = std::ldexp(std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng),
                               std::uniform_int_distribution<int>(-26, 16)(rng));
    EXPECT_EQ(f32_to_f16(f), nearest_f16(f)) << f;
  }
}

__attribute__((target("f16c"))) uint16_t hardware_f16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float hardware_f32(uint16_t h) { return _cvtsh_ss(h); }

TEST(Half, MatchesF16cInstructions) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C on this CPU";
  std::mt19937 rng(11);
  for (int i = 0; i < 1'000'000; ++i) {
    const float f = from_bits(static_cast<uint32_t>(rng()));
    ASSERT_EQ(f32_to_f16(f), hardware_f16(f)) << std::hex << bits(f);
  }
  for (uint32_t h = 0; h < 0x10000; ++h) {
    ASSERT_EQ(bits(f16_to_f32(static_cast<uint16_t>(h))),
              bits(hardware_f32(static_cast<uint16_t>(h))))
        << h;
  }
}

TEST(Bf16, ConversionsRoundToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc0a0), -5.0f);
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808000)), 0x3f80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f818000)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808001)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f807fff)), 0x3f80);
  EXPECT_EQ(f32_to_bf16(from_bits(0x7f7fffff)), 0x7f80);  // largest float rounds to inf
  EXPECT_EQ(f32_to_bf16(-INFINITY), 0xff80);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16(from_bits(0x00000001)), 0x0000);  // subnormal rounds to zero
  EXPECT_EQ(f32_to_bf16(from_bits(0x00008000)), 0x0000);  // tie with zero
  EXPECT_EQ(f32_to_bf16(from_bits(0x00018000)), 0x0002);
}

TEST(Bf16, NaNStaysNaN) {
  // A NaN whose payload lives only in the low 16 bits would round to infinity without care.
  for (uint32_t nan : {0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7fffffffu, 0x7f80ffffu}) {
    const uint16_t b = f32_to_bf16(from_bits(nan));
    EXPECT_TRUE(std::isnan(bf16_to_f32(b))) << std::hex << nan;
    EXPECT_EQ(b & 0x8000, (nan >> 16) & 0x8000) << std::hex << nan;
  }
}

TEST(Bf16, RoundTripsEveryValue) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_to_f32(static_cast<uint16_t>(b));
    EXPECT_EQ(bits(f), b << 16);
    if (!std::isnan(f)) {
      EXPECT_EQ(f32_to_bf16(f), b);
    }
  }
}

}  // namespace
}  // namespace tally
