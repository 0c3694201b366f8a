// The interleaved layout of Q8_0 / Q4_0 (matmul_repack.h): repacking keeps every byte (row
// by row, round trip), matmul gives the same bits on repacked and GGUF-layout weights on every
// ISA path (the GGUF layout is interleaved per task by vector code, the repacked one by the
// scalar interleave_group: a difference between the two would show), and Q8_0 / Q4_0 follow
// the documented canonical order (one fma chain per output, blocks in order).
#include "backend/cpu/matmul_repack.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backend/cpu/matmul.h"
#include "matmul_test_util.h"
#include "tensor/half.h"

namespace tally::cpu {
namespace {

using test::make_acts;
using test::make_weights;

const IsaLevel kLevels[] = {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512};
const DType kTypes[] = {DType::kQ8_0, DType::kQ4_0};

TEST(MatmulRepack, BytesAndRoundTrip) {
  ThreadPool pool(2);
  for (DType type : kTypes) {
    for (int64_t n_out : {1, 8, 13, 40}) {
      const int64_t n_in = 96;
      const auto w = make_weights(type, n_out, n_in, 3, /*pad_bytes=*/6);
      const RepackedWeights r(w.view, pool);
      const int64_t row = dtype_row_bytes(type, n_in);
      EXPECT_EQ(r.bytes(), (n_out + 7) / 8 * 8 * row);
      EXPECT_EQ(repacked_bytes(w.view), r.bytes());
      EXPECT_EQ(r.view().layout, WeightLayout::kInterleaved8);
      EXPECT_EQ(r.view().row_bytes, row);
      std::vector<uint8_t> back(row);
      for (int64_t o = 0; o < n_out; ++o) {
        interleaved_row(r.view(), o, back.data());
        ASSERT_EQ(0, std::memcmp(back.data(), w.bytes.data() + o * w.view.row_bytes, row))
            << dtype_name(type) << " row " << o << " of " << n_out;
      }
      // Single-threaded repacking makes the same bytes.
      const RepackedWeights alone(w.view);
      EXPECT_EQ(0, std::memcmp(alone.view().data, r.view().data, r.bytes())) << dtype_name(type);
    }
  }
  EXPECT_FALSE(repack_supported(DType::kF16));
  EXPECT_FALSE(repack_supported(DType::kQ4_K));
  const auto f16 = make_weights(DType::kF16, 8, 32, 1);
  EXPECT_EQ(repacked_bytes(f16.view), 0);
}

TEST(MatmulRepack, SameBitsAsRowLayoutOnEveryPath) {
  ThreadPool pool(3);
  for (DType type : kTypes) {
    for (int64_t n_out : {5, 16, 37}) {      // a partial group alone, two full, a partial tail
      for (int64_t n_tokens : {1, 3, 70}) {  // one token, a remainder, > one token block
        const int64_t n_in = 160;
        const auto w = make_weights(type, n_out, n_in, 11);
        const auto x = make_acts(n_tokens, n_in, 12);
        const RepackedWeights r(w.view, pool);
        for (IsaLevel level : kLevels) {
          std::vector<float> rows(n_tokens * n_out, NAN), packed(n_tokens * n_out, NAN);
          if (!matmul_with_isa(level, w.view, x.data(), n_tokens, rows.data(), pool)) continue;
          ASSERT_TRUE(matmul_with_isa(level, r.view(), x.data(), n_tokens, packed.data(), pool));
          EXPECT_EQ(0, std::memcmp(rows.data(), packed.data(), rows.size() * sizeof(float)))
              << dtype_name(type) << " " << isa_level_name(level) << " n_out=" << n_out
              << " n_tokens=" << n_tokens;
        }
        std::vector<float> ref(n_tokens * n_out);
        matmul_reference(r.view(), x.data(), n_tokens, ref.data());
        const auto bound = test::error_bounds(w.view, x.data(), n_tokens);
        std::vector<float> y(n_tokens * n_out);
        matmul(r.view(), x.data(), n_tokens, y.data(), pool);
        for (int64_t i = 0; i < n_tokens * n_out; ++i)
          ASSERT_LE(std::fabs(double(y[i]) - ref[i]), bound[i]) << dtype_name(type) << " at " << i;
      }
    }
  }
}

// The documented order, written out: acc = fma(w_d * x_d, float(int dot), acc) block by block.
float canonical_dot(DType type, const uint8_t* row, const float* x, int64_t n_in) {
  const int64_t nb = n_in / 32;
  std::vector<int8_t> q(n_in);
  std::vector<float> d(nb);
  std::vector<int16_t> sums(nb);
  detail::act_quantize_row32(x, n_in, q.data(), d.data(), sums.data());
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t dot = 0;
    uint16_t wd = 0;
    if (type == DType::kQ8_0) {
      const auto& blk = reinterpret_cast<const BlockQ8_0*>(row)[b];
      wd = blk.d;
      for (int i = 0; i < 32; ++i) dot += blk.qs[i] * q[b * 32 + i];
    } else {
      const auto& blk = reinterpret_cast<const BlockQ4_0*>(row)[b];
      wd = blk.d;
      for (int i = 0; i < 16; ++i)
        dot += ((blk.qs[i] & 15) - 8) * q[b * 32 + i] + ((blk.qs[i] >> 4) - 8) * q[b * 32 + 16 + i];
    }
    acc = std::fma(f16_to_f32(wd) * d[b], static_cast<float>(dot), acc);
  }
  return acc;
}

TEST(MatmulRepack, Block32TypesFollowOneChainInBlockOrder) {
  ThreadPool pool(2);
  for (DType type : kTypes) {
    const int64_t n_in = 800, n_out = 11, n_tokens = 2;  // 25 blocks: not a multiple of 8
    const auto w = make_weights(type, n_out, n_in, 21);
    const auto x = make_acts(n_tokens, n_in, 22);
    std::vector<float> y(n_tokens * n_out);
    matmul(w.view, x.data(), n_tokens, y.data(), pool);
    for (int64_t t = 0; t < n_tokens; ++t)
      for (int64_t o = 0; o < n_out; ++o) {
        const float want =
            canonical_dot(type, w.bytes.data() + o * w.view.row_bytes, x.data() + t * n_in, n_in);
        ASSERT_EQ(0, std::memcmp(&want, &y[t * n_out + o], sizeof(float)))
            << dtype_name(type) << " token " << t << " row " << o << ": " << y[t * n_out + o]
            << " vs " << want;
      }
  }
}

TEST(MatmulRepack, RepeatGivesMatmulsResult) {
  ThreadPool pool(2);
  for (DType type : {DType::kQ4_0, DType::kF16, DType::kQ6_K}) {
    const int64_t n_in = 256, n_out = 24, n_tokens = 5;
    const auto w = make_weights(type, n_out, n_in, 31);
    const auto x = make_acts(n_tokens, n_in, 32);
    std::vector<float> once(n_tokens * n_out), repeated(n_tokens * n_out, NAN);
    matmul(w.view, x.data(), n_tokens, once.data(), pool);
    matmul_repeat(w.view, x.data(), n_tokens, repeated.data(), 3, pool);
    EXPECT_EQ(0, std::memcmp(once.data(), repeated.data(), once.size() * sizeof(float)))
        << dtype_name(type);
  }
}

}  // namespace
}  // namespace tally::cpu
