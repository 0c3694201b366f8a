// Batch invariance (matmul.h's promise): y[t][o] is the same bits whatever n_tokens is, which
// other rows share the call, and how many threads run it.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backend/cpu/matmul.h"
#include "matmul_test_util.h"

namespace tally::cpu {
namespace {

using test::make_acts;
using test::make_weights;

const DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                        DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K, DType::kQ3_K,
                        DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS};

int64_t n_in_for(DType type) {
  switch (type) {
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS:
      return 768;
    case DType::kIQ4_NL:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
      return 288;  // 9 blocks: a group of 8 and a tail
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return 131;
    default:
      return 160;
  }
}

TEST(MatmulInvariance, BatchSizeAndThreadCountDoNotChangeBits) {
  // 19 tokens: more than one block of tokens inside a tile (16 quantized, 8 float), and a
  // remainder of 3 for the 4-token kernels.
  const int64_t n_out = 53, n_tokens = 19;
  for (DType type : kTypes) {
    const int64_t n_in = n_in_for(type);
    const auto w = make_weights(type, n_out, n_in, 21);
    const auto x = make_acts(n_tokens, n_in, 22);
    // Each row alone, single-threaded.
    std::vector<float> alone(n_tokens * n_out);
    ThreadPool one(1);
    for (int64_t t = 0; t < n_tokens; ++t)
      matmul(w.view, x.data() + t * n_in, 1, alone.data() + t * n_out, one);
    for (int threads : {1, 2, 3, 4}) {
      ThreadPool pool(threads);
      std::vector<float> batched(n_tokens * n_out);
      matmul(w.view, x.data(), n_tokens, batched.data(), pool);
      EXPECT_EQ(0, std::memcmp(batched.data(), alone.data(), batched.size() * sizeof(float)))
          << dtype_name(type) << " threads=" << threads;
      // A sub-batch starting at row 2 (different neighbours, different positions).
      std::vector<float> sub(4 * n_out);
      matmul(w.view, x.data() + 2 * n_in, 4, sub.data(), pool);
      EXPECT_EQ(0, std::memcmp(sub.data(), alone.data() + 2 * n_out, sub.size() * sizeof(float)))
          << dtype_name(type) << " threads=" << threads;
    }
  }
}

TEST(MatmulInvariance, OtherRowsContentDoesNotMatter) {
  // Row 0 fixed; the other rows change from small to huge values (which would change a
  // per-batch activation scale).
  const int64_t n_out = 24, n_tokens = 3;
  ThreadPool pool(2);
  for (DType type : kTypes) {
    const int64_t n_in = n_in_for(type);
    const auto w = make_weights(type, n_out, n_in, 31);
    auto x = make_acts(n_tokens, n_in, 32);
    std::vector<float> first(n_tokens * n_out), second(n_tokens * n_out);
    matmul(w.view, x.data(), n_tokens, first.data(), pool);
    for (int64_t i = n_in; i < n_tokens * n_in; ++i) x[i] *= 1000.0f;
    matmul(w.view, x.data(), n_tokens, second.data(), pool);
    EXPECT_EQ(0, std::memcmp(first.data(), second.data(), n_out * sizeof(float)))
        << dtype_name(type);
  }
}

TEST(MatmulInvariance, ScratchSurvivesShrinkingAndGrowingCalls) {
  const DType type = DType::kQ4_K;
  const int64_t n_in = 512, n_out = 16;
  const auto w = make_weights(type, n_out, n_in, 41);
  const auto x = make_acts(8, n_in, 42);
  ThreadPool pool(2);
  std::vector<float> big(8 * n_out), small(n_out), again(8 * n_out);
  matmul(w.view, x.data(), 8, big.data(), pool);
  matmul(w.view, x.data() + 5 * n_in, 1, small.data(), pool);
  matmul(w.view, x.data(), 8, again.data(), pool);
  EXPECT_EQ(0, std::memcmp(big.data(), again.data(), big.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(small.data(), big.data() + 5 * n_out, small.size() * sizeof(float)));
}

}  // namespace
}  // namespace tally::cpu
