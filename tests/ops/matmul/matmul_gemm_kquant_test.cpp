// The many-token GEMMs over 16-row unpacked groups (matmul_gemm_kquant_pack.h): the
// super-block types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS) on AVX-512 VNNI
// (matmul_gemm_kquant_zmm.h), AVX2 and AVX2 + AVX-VNNI (matmul_gemm_kquant_ymm.h), and the
// 32-block types Q4_1, Q5_0, Q5_1, IQ4_NL on the same three (matmul_gemm_block32_zmm.h,
// matmul_gemm_block32_ymm.h; AVX2's int16 runs of 8 / 4 / 1 chunks and IQ4_NL signed). Every
// shape their loops split differently (16-row groups and a partial one, token tiles of
// 8 / 4 / 2 / 1, odd block counts) gives the scalar kernels' bits on every path this CPU has,
// by name; a token's result does not depend on the batch, its chunking or the thread count
// (one token takes the per-row kernels, many the GEMM); blocks of random bytes (every scale,
// min and quant, the extremes included) stay exact; and the products stay within the
// reference's bound. On CPUs without AVX-512 VNNI the checks fall to the paths there are
// (tally_matmul_avx512_emulated covers the AVX-512 code there).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/matmul.h"
#include "matmul_test_util.h"
#include "tensor/half.h"

namespace tally::cpu {
namespace {

using test::expect_paths_equal_scalar;
using test::make_acts;
using test::make_weights;

const DType kTypes[] = {DType::kQ4_K, DType::kQ6_K,  DType::kQ5_K, DType::kQ3_K,
                        DType::kQ2_K, DType::kIQ4_XS, DType::kQ4_1, DType::kQ5_0,
                        DType::kQ5_1, DType::kIQ4_NL};

bool is_block32(DType type) { return dtype_info(type).block_size == 32; }

std::string label(DType type, int64_t n_in, int64_t n_out, int64_t n_tokens) {
  return std::string(dtype_name(type)) + " n_in=" + std::to_string(n_in) +
         " n_out=" + std::to_string(n_out) + " tokens=" + std::to_string(n_tokens);
}

TEST(MatmulGemmKQuant, EveryTileShapeGivesScalarBits) {
  ThreadPool pool(2);
  for (DType type : kTypes) {
    // Blocks: fewer than the 8 float lanes, and more (lanes that get two blocks); for the
    // 32-block types also an odd count (the unpacking goes by pairs of blocks).
    const std::vector<int64_t> n_ins =
        is_block32(type) ? std::vector<int64_t>{96, 800, 2560} : std::vector<int64_t>{256, 2560};
    for (int64_t n_in : n_ins) {
      // Rows: one group, a group and a partial one, groups across tasks with a tail.
      for (int64_t n_out : {16, 21, 77}) {
        const auto w = make_weights(type, n_out, n_in, 31);
        // Tokens: below the GEMM's minimum, exactly it, 8 + 4 + 2 + 1, and many tiles.
        for (int64_t n_tokens : {7, 8, 15, 40}) {
          const auto x = make_acts(n_tokens, n_in, 32);
          expect_paths_equal_scalar(w.view, x, n_tokens, pool, label(type, n_in, n_out, n_tokens));
        }
      }
    }
  }
}

TEST(MatmulGemmKQuant, TokenResultDoesNotDependOnBatchChunksOrThreads) {
  for (DType type : kTypes) {
    const auto w = make_weights(type, 70, 1536, 7);
    test::expect_token_results_independent(w.view, make_acts(27, 1536, 8),
                                           std::string(dtype_name(type)));
  }
}

// Weights of random bytes (every scale, min and quant value the format allows), or of 0xff
// (the largest scales and quants everywhere); only the f16 factors are set to finite values.
std::vector<uint8_t> random_blocks(DType type, int64_t n_out, int64_t n_in, uint32_t seed,
                                   bool all_ones) {
  const int64_t row_bytes = dtype_row_bytes(type, n_in);
  std::vector<uint8_t> bytes(n_out * row_bytes);
  std::mt19937 rng(seed);
  for (auto& b : bytes) b = all_ones ? 0xff : static_cast<uint8_t>(rng());
  const auto set = [&](uint8_t* p, float v) {
    const uint16_t h = f32_to_f16(v);
    std::memcpy(p, &h, 2);
  };
  const int64_t block = dtype_info(type).block_bytes;
  for (int64_t off = 0; off < n_out * row_bytes; off += block) {
    uint8_t* blk = bytes.data() + off;
    const float d = 0.001f * static_cast<float>(1 + rng() % 100);
    switch (type) {
      case DType::kQ4_K:
      case DType::kQ5_K:
        set(blk, d), set(blk + 2, -d * 0.5f);
        break;
      case DType::kQ2_K:
        set(blk + 80, d), set(blk + 82, d * 0.25f);
        break;
      case DType::kQ3_K:
        set(blk + 108, d);
        break;
      case DType::kQ6_K:
        set(blk + 208, d);
        break;
      case DType::kIQ4_XS:
      case DType::kQ5_0:
      case DType::kIQ4_NL:
        set(blk, d);
        break;
      case DType::kQ4_1:
      case DType::kQ5_1:
        set(blk, d), set(blk + 2, -d * 4.0f);
        break;
      default:
        ADD_FAILURE() << "no layout for " << dtype_name(type);
    }
  }
  return bytes;
}

TEST(MatmulGemmKQuant, RandomBlocksAndExtremesGiveScalarBits) {
  ThreadPool pool(2);
  const int64_t n_in = 1024, n_out = 48, n_tokens = 13;
  for (DType type : kTypes) {
    for (int all_ones = 0; all_ones < 2; ++all_ones) {
      const auto bytes = random_blocks(type, n_out, n_in, 5, all_ones != 0);
      const WeightMatrix w{type, n_in, n_out, bytes.data(), dtype_row_bytes(type, n_in)};
      auto x = make_acts(n_tokens, n_in, 9);
      // Token 0 at the activation extremes: every quant +-127.
      for (int64_t k = 0; k < n_in; ++k) x[k] = (k % 3 == 0) ? -1.0f : 1.0f;
      expect_paths_equal_scalar(w, x, n_tokens, pool,
                                std::string(dtype_name(type)) + (all_ones ? " 0xff" : " random"));
    }
  }
}

TEST(MatmulGemmKQuant, ManyTokensWithinReferenceBound) {
  ThreadPool pool(2);
  const int64_t n_in = 768, n_out = 37, n_tokens = 20;
  for (DType type : kTypes) {
    const auto w = make_weights(type, n_out, n_in, 11);
    const auto x = make_acts(n_tokens, n_in, 12);
    std::vector<float> ref(n_tokens * n_out), y(n_tokens * n_out);
    matmul_reference(w.view, x.data(), n_tokens, ref.data());
    matmul(w.view, x.data(), n_tokens, y.data(), pool);
    const auto bounds = test::error_bounds(w.view, x.data(), n_tokens);
    for (int64_t i = 0; i < n_tokens * n_out; ++i)
      ASSERT_LE(std::fabs(double(y[i]) - double(ref[i])), bounds[i])
          << dtype_name(type) << " element " << i << ": " << y[i] << " vs " << ref[i];
  }
}

}  // namespace
}  // namespace tally::cpu
