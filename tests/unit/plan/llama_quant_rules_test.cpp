// llama.cpp's llama-quantize rules (llama_tensor_get_type), the one copy the planner and the
// quantizer share.
#include "plan/llama_quant_rules.h"

#include <gtest/gtest.h>

#include "plan/plan_presets.h"

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

// The type each file type gives a tensor of llama-3-8b (32 layers, GQA 4, rows of 4096 and
// 14336: whole 256-blocks), by llama_tensor_get_type's rules.
DType type_in(const char* file_type, const char* tensor, const LlamaQuantOverrides& o = {}) {
  static const PlanModel m = *plan_preset("llama-3-8b");
  for (const PlanTensor& t : m.tensors)
    if (t.name == tensor) return llama_quant_tensor_type(*llama_file_type_from_name(file_type), t, m, o).type;
  ADD_FAILURE() << tensor;
  return DType::kF32;
}

TEST(LlamaQuantRules, EachMixGivesItsTensorsMoreBits) {
  // Q2_K: attn_v q4_K under GQA >= 4, ffn_down and attn_output q3_K.
  EXPECT_EQ(type_in("Q2_K", "blk.5.attn_v.weight"), DType::kQ4_K);
  EXPECT_EQ(type_in("Q2_K", "blk.5.ffn_down.weight"), DType::kQ3_K);
  EXPECT_EQ(type_in("Q2_K", "blk.5.attn_output.weight"), DType::kQ3_K);
  EXPECT_EQ(type_in("Q2_K", "blk.5.attn_q.weight"), DType::kQ2_K);
  EXPECT_EQ(type_in("Q2_K", "output.weight"), DType::kQ6_K);
  // Q3_K_S: the base type everywhere but the output.
  EXPECT_EQ(type_in("Q3_K_S", "blk.0.attn_v.weight"), DType::kQ3_K);
  EXPECT_EQ(type_in("Q3_K_S", "blk.0.ffn_down.weight"), DType::kQ3_K);
  // Q3_K_M: attn_v q5_K in the first 2 layers then q4_K; ffn_down q5_K in the first n/16, then
  // q4_K; attn_output q4_K.
  EXPECT_EQ(type_in("Q3_K_M", "blk.1.attn_v.weight"), DType::kQ5_K);
  EXPECT_EQ(type_in("Q3_K_M", "blk.2.attn_v.weight"), DType::kQ4_K);
  EXPECT_EQ(type_in("Q3_K_M", "blk.1.ffn_down.weight"), DType::kQ5_K);
  EXPECT_EQ(type_in("Q3_K_M", "blk.2.ffn_down.weight"), DType::kQ4_K);
  EXPECT_EQ(type_in("Q3_K_M", "blk.2.attn_output.weight"), DType::kQ4_K);
  EXPECT_EQ(type_in("Q3_K_M", "blk.2.ffn_up.weight"), DType::kQ3_K);
  // Q3_K_L: attn_v, ffn_down and attn_output q5_K.
  for (const char* t : {"blk.9.attn_v.weight", "blk.9.ffn_down.weight", "blk.9.attn_output.weight"})
    EXPECT_EQ(type_in("Q3_K_L", t), DType::kQ5_K) << t;
  // Q4_K_S: attn_v of the first 4 layers and ffn_down of the first n/8 q5_K.
  EXPECT_EQ(type_in("Q4_K_S", "blk.3.attn_v.weight"), DType::kQ5_K);
  EXPECT_EQ(type_in("Q4_K_S", "blk.4.attn_v.weight"), DType::kQ4_K);
  EXPECT_EQ(type_in("Q4_K_S", "blk.3.ffn_down.weight"), DType::kQ5_K);
  EXPECT_EQ(type_in("Q4_K_S", "blk.4.ffn_down.weight"), DType::kQ4_K);
  // Q4_K_M / Q5_K_M: attn_v and ffn_down of the use_more_bits layers q6_K.
  EXPECT_EQ(type_in("Q4_K_M", "blk.6.attn_v.weight"), DType::kQ6_K);
  EXPECT_EQ(type_in("Q4_K_M", "blk.7.attn_v.weight"), DType::kQ4_K);
  EXPECT_EQ(type_in("Q5_K_M", "blk.31.ffn_down.weight"), DType::kQ6_K);
  EXPECT_EQ(type_in("Q5_K_S", "blk.31.ffn_down.weight"), DType::kQ5_K);
  // IQ4_NL / IQ4_XS: attn_v q5_K under GQA >= 4, ffn_down of the first n/8 q5_K.
  EXPECT_EQ(type_in("IQ4_XS", "blk.20.attn_v.weight"), DType::kQ5_K);
  EXPECT_EQ(type_in("IQ4_NL", "blk.3.ffn_down.weight"), DType::kQ5_K);
  EXPECT_EQ(type_in("IQ4_NL", "blk.4.ffn_down.weight"), DType::kIQ4_NL);
  // The 32-blocks have no mix beyond the output; q8_0 keeps even that.
  EXPECT_EQ(type_in("Q4_0", "blk.0.ffn_down.weight"), DType::kQ4_0);
  EXPECT_EQ(type_in("Q4_0", "output.weight"), DType::kQ6_K);
  EXPECT_EQ(type_in("Q8_0", "output.weight"), DType::kQ8_0);
  EXPECT_EQ(type_in("Q5_1", "token_embd.weight"), DType::kQ5_1);
  EXPECT_EQ(type_in("F16", "output.weight"), DType::kF16);
  EXPECT_EQ(type_in("F16", "blk.0.attn_norm.weight"), DType::kF32);
}

TEST(LlamaQuantRules, PureAndOverrides) {
  LlamaQuantOverrides pure;
  pure.pure = true;
  EXPECT_EQ(type_in("Q4_K_M", "output.weight", pure), DType::kQ4_K);
  EXPECT_EQ(type_in("Q4_K_M", "blk.0.attn_v.weight", pure), DType::kQ4_K);
  LlamaQuantOverrides o;
  o.output_type = DType::kQ8_0;
  o.token_embd_type = DType::kQ6_K;
  EXPECT_EQ(type_in("Q4_K_M", "output.weight", o), DType::kQ8_0);
  EXPECT_EQ(type_in("Q4_K_M", "token_embd.weight", o), DType::kQ6_K);
  EXPECT_EQ(type_in("Q4_K_M", "blk.0.attn_v.weight", o), DType::kQ6_K);  // the mix stays
}

TEST(LlamaQuantRules, SeventyBAttnVGetsQ5K) {
  const PlanModel m = *plan_preset("llama-3-70b");  // 80 layers, attn_v 8x smaller than attn_q
  for (const PlanTensor& t : m.tensors) {
    if (t.name != "blk.11.attn_v.weight") continue;  // not a use_more_bits layer
    EXPECT_EQ(llama_quant_tensor_type(*llama_file_type_from_name("Q4_K_M"), t, m).type, DType::kQ5_K);
    EXPECT_EQ(llama_quant_tensor_type(*llama_file_type_from_name("Q3_K_S"), t, m).type, DType::kQ5_K);
  }
}

// With an importance matrix llama.cpp gives Q4_0 / Q5_0's first eighth of ffn_down q4_1 /
// q5_1, and IQ4_NL / IQ4_XS's no q5_K.
TEST(LlamaQuantRules, AnImatrixChangesTheMix) {
  LlamaQuantOverrides im;
  im.has_imatrix = true;
  EXPECT_EQ(type_in("Q4_0", "blk.3.ffn_down.weight", im), DType::kQ4_1);  // 3 < 32/8
  EXPECT_EQ(type_in("Q4_0", "blk.4.ffn_down.weight", im), DType::kQ4_0);
  EXPECT_EQ(type_in("Q5_0", "blk.0.ffn_down.weight", im), DType::kQ5_1);
  EXPECT_EQ(type_in("Q4_0", "blk.0.ffn_down.weight"), DType::kQ4_0);  // not without
  EXPECT_EQ(type_in("Q4_0", "blk.0.ffn_up.weight", im), DType::kQ4_0);
  EXPECT_EQ(type_in("IQ4_XS", "blk.0.ffn_down.weight", im), DType::kIQ4_XS);
  EXPECT_EQ(type_in("IQ4_NL", "blk.3.ffn_down.weight", im), DType::kIQ4_NL);
  EXPECT_EQ(type_in("IQ4_XS", "blk.20.attn_v.weight", im), DType::kQ5_K);  // attn_v unchanged
  EXPECT_EQ(type_in("Q4_K_M", "blk.6.attn_v.weight", im), DType::kQ6_K);
}

// A fused attn_qkv takes attn_v's rules (llama.cpp counts it as attn_v-like).
TEST(LlamaQuantRules, FusedQkvFollowsAttnV) {
  PlanModel m = *plan_preset("llama-3-8b");
  PlanTensor qkv;
  qkv.name = "blk.6.attn_qkv.weight";
  qkv.layer = 6;
  qkv.n_cols = 4096;
  qkv.n_rows = 6144;
  EXPECT_EQ(llama_quant_tensor_type(*llama_file_type_from_name("Q4_K_M"), qkv, m).type, DType::kQ6_K);
  qkv.name = "blk.7.attn_qkv.weight";
  qkv.layer = 7;
  EXPECT_EQ(llama_quant_tensor_type(*llama_file_type_from_name("Q4_K_M"), qkv, m).type, DType::kQ4_K);
  EXPECT_EQ(llama_quant_tensor_type(*llama_file_type_from_name("Q3_K_L"), qkv, m).type, DType::kQ5_K);
}

TEST(LlamaQuantRules, FileTypeNames) {
  EXPECT_EQ(llama_file_type_from_name("q4_k")->name, "Q4_K_M");
  EXPECT_EQ(llama_file_type_from_name("Q5_K")->ftype, 17u);
  EXPECT_EQ(llama_file_type_from_name("iq4_xs")->ftype, 30u);
  EXPECT_FALSE(llama_file_type_from_name("q4_k_l").has_value());
  EXPECT_EQ(llama_file_types().size(), 19u);
}

TEST(LlamaQuantRules, PartialBlocksFallBackAsLlamaCppDoes) {
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ4_K, 4096), DType::kQ4_K);  // whole blocks
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ4_K, 896), DType::kQ5_0);
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ5_K, 896), DType::kQ5_1);
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ6_K, 896), DType::kQ8_0);
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ3_K, 896), DType::kQ4_0);
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ2_K, 896), DType::kQ4_0);
  EXPECT_EQ(llama_quant_block_fallback(DType::kIQ4_XS, 896), DType::kIQ4_NL);
  // Not whole blocks of the fallback either: f16.
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ6_K, 48), DType::kF16);
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ4_K, 48), DType::kF16);
  // The 32-blocks have no smaller block: f16.
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ8_0, 48), DType::kF16);
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ4_0, 48), DType::kF16);
  EXPECT_EQ(llama_quant_block_fallback(DType::kIQ4_NL, 48), DType::kF16);
  EXPECT_EQ(llama_quant_block_fallback(DType::kQ8_0, 64), DType::kQ8_0);
}

}  // namespace
}  // namespace tally::plan
