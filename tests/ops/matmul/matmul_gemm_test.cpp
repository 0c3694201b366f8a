// The many-token tiles (the AVX-512 GEMM of Q8_0 / Q4_0, the 512-bit and 256-bit float GEMMs):
// every shape their loops split differently (row panels of 32, 8 or 6, pairs, a lone group or
// row; token tiles of 6 / 4 / 2 and their remainders; token blocks of 32 / 96) gives the
// scalar kernels' bits, on GGUF rows and on repacked weights; a float token's result does not
// depend on the batch, its chunks or the threads; and extreme Q8_0 quants (-128, through the
// u8 + 128 trick) stay exact. Every path this CPU has is checked by name (plain AVX2 and AVX2
// with AVX-VNNI apart); on CPUs without AVX-512 VNNI the AVX-512 code is covered by
// tally_matmul_avx512_emulated.
#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_repack.h"
#include "matmul_test_util.h"
#include "tensor/half.h"

namespace tally::cpu {
namespace {

using test::expect_paths_equal_scalar;
using test::make_acts;
using test::make_weights;

TEST(MatmulGemm, EveryTileShapeGivesScalarBits) {
  ThreadPool pool(2);
  // Floats: a tail of 3 past the 8-lane steps, in a short row and a longer one.
  const std::pair<DType, int64_t> cases[] = {
      {DType::kQ8_0, 96}, {DType::kQ4_0, 96}, {DType::kF32, 83},  {DType::kF16, 83},
      {DType::kBF16, 83}, {DType::kF32, 611}, {DType::kF16, 611}, {DType::kBF16, 611}};
  for (const auto& [type, n_in] : cases) {
    const bool quant = type == DType::kQ8_0 || type == DType::kQ4_0;
    // Rows: one group; 3 groups (pair + lone); 5 (panel + lone); 13 groups less 3 rows.
    for (int64_t n_out : {8, 24, 40, 101}) {
      const auto w = make_weights(type, n_out, n_in, 31);
      std::vector<RepackedWeights> packed;
      if (quant) packed.emplace_back(w.view, pool);
      for (int64_t n_tokens : {2, 3, 5, 7, 8, 16, 70, 101}) {
        const auto x = make_acts(n_tokens, n_in, 32);
        const std::string what = std::string(dtype_name(type)) + " n_in=" +
                                 std::to_string(n_in) + " n_out=" + std::to_string(n_out) +
                                 " tokens=" + std::to_string(n_tokens);
        expect_paths_equal_scalar(w.view, x, n_tokens, pool, what + " rows");
        if (quant) expect_paths_equal_scalar(packed[0].view(), x, n_tokens, pool, what + " packed");
      }
    }
  }
}

TEST(MatmulGemm, FloatTokenResultDoesNotDependOnBatchChunksOrThreads) {
  // 611 inputs: a tail of 3 past the 8-lane steps; 70 rows: panels, pairs and lone rows.
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16}) {
    const auto w = make_weights(type, 70, 611, 13);
    test::expect_token_results_independent(w.view, make_acts(27, 611, 14),
                                           std::string(dtype_name(type)));
  }
}

TEST(MatmulGemm, Q8_0ExtremeQuantsStayExact) {
  // Every quant -128 or 127 (the u8 + 128 form reaches 0 and 255), scale 1; activations
  // quantize to +-127. Then each block's dot is an integer the float steps carry exactly.
  const int64_t n_in = 64, n_out = 32, n_tokens = 6;
  const int64_t row_bytes = dtype_row_bytes(DType::kQ8_0, n_in);
  std::vector<uint8_t> bytes(n_out * row_bytes);
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t b = 0; b < n_in / 32; ++b) {
      uint8_t* block = bytes.data() + o * row_bytes + b * 34;
      const uint16_t one = f32_to_f16(1.0f);
      std::memcpy(block, &one, 2);
      for (int i = 0; i < 32; ++i)
        block[2 + i] = static_cast<uint8_t>(((o + i + b) % 3 == 0) ? 0x80 : 0x7f);
    }
  }
  const WeightMatrix w{DType::kQ8_0, n_in, n_out, bytes.data(), row_bytes};
  std::vector<float> x(n_tokens * n_in);
  for (int64_t i = 0; i < n_tokens * n_in; ++i) x[i] = (i % 5 == 0) ? -1.0f : 1.0f;
  ThreadPool pool(1);
  expect_paths_equal_scalar(w, x, n_tokens, pool, "q8_0 extremes");
  std::vector<float> y(n_tokens * n_out);
  matmul(w, x.data(), n_tokens, y.data(), pool);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t o = 0; o < n_out; ++o) {
      double want = 0;  // x quantizes to +-127 with scale 1/127: the product is sum(q * x)
      for (int64_t k = 0; k < n_in; ++k) {
        const int q = ((o + k % 32 + k / 32) % 3 == 0) ? -128 : 127;
        want += q * x[t * n_in + k];
      }
      EXPECT_NEAR(y[t * n_out + o], want, 1e-3 * std::abs(want) + 1e-3) << t << "," << o;
    }
  }
}

}  // namespace
}  // namespace tally::cpu
