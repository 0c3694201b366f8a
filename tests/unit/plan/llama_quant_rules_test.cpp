// llama.cpp's llama-quantize rules (llama_tensor_get_type), the one copy the planner and the
// quantizer share.
#include "plan/llama_quant_rules.h"

#include <gtest/gtest.h>

namespace tally::plan {
namespace {

TEST(LlamaQuantRules, MoreBitsLayersAreUseMoreBits) {
  // 32 layers, n/8 = 4: layers 0-3 and 28-31, and (i - 4) % 3 == 2 between: 6, 9, ..., 27.
  std::vector<int> more;
  for (int i = 0; i < 32; ++i)
    if (llama_quant_more_bits_layer(i, 32)) more.push_back(i);
  const std::vector<int> expected = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
  EXPECT_EQ(more, expected);
  EXPECT_FALSE(llama_quant_more_bits_layer(-1, 32));  // outside the blocks
}

TEST(LlamaQuantRules, OnlyAttnVAndFfnDownOfThoseLayersGetMoreBits) {
  PlanModel m;
  m.n_layers = 32;
  PlanTensor t;
  t.layer = 6;
  for (TensorRole role : {TensorRole::kAttnV, TensorRole::kFfnDown}) {
    t.role = role;
    EXPECT_TRUE(llama_quant_more_bits_tensor(t, m));
  }
  for (TensorRole role : {TensorRole::kAttnQ, TensorRole::kFfnUp, TensorRole::kOutput}) {
    t.role = role;
    EXPECT_FALSE(llama_quant_more_bits_tensor(t, m));
  }
  t.role = TensorRole::kAttnV;
  t.layer = 7;
  EXPECT_FALSE(llama_quant_more_bits_tensor(t, m));
}

TEST(LlamaQuantRules, PartialBlocksFallBackAsLlamaCppDoes) {
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ4_K, 4096), DType::kQ4_K);  // whole blocks
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ4_K, 896), DType::kQ5_0);
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ5_K, 896), DType::kQ5_1);
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ6_K, 896), DType::kQ8_0);
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ3_K, 896), DType::kIQ4_NL);
  // Not whole blocks of the fallback either: f16.
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ6_K, 48), DType::kF16);
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ4_K, 48), DType::kF16);
  // llama.cpp has no fallback for the 32-blocks: it refuses the tensor.
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ8_0, 48), std::nullopt);
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ4_0, 48), std::nullopt);
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ8_0, 64), DType::kQ8_0);
}

}  // namespace
}  // namespace tally::plan
