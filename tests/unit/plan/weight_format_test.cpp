#include "plan/weight_format.h"

#include <gtest/gtest.h>

#include "plan/plan.h"
#include "plan/plan_presets.h"

namespace tally::plan {
namespace {

struct Split {
  int64_t matrix_params = 0;
  int64_t vector_params = 0;
};

Split split_params(const PlanModel& m) {
  Split s;
  for (const auto& t : m.tensors)
    (t.is_vector() ? s.vector_params : s.matrix_params) += t.n_elements();
  return s;
}

int64_t model_bytes(const PlanModel& m, const char* format) {
  PlanOptions o;
  auto f = weight_format_from_name(format);
  EXPECT_TRUE(f.ok()) << format;
  o.weights = *f;
  auto p = compute_plan(m, o);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? p->weight_bytes_model : -1;
}

TEST(WeightFormat, BytesPerWeightFollowTheBlockLayouts) {
  auto m = plan_preset("llama-2-7b");  // every row length is a multiple of 256
  ASSERT_TRUE(m.ok());
  const Split s = split_params(*m);
  const int64_t vectors = s.vector_params * 4;  // norms stay f32
  EXPECT_EQ(model_bytes(*m, "f32"), (s.matrix_params + s.vector_params) * 4);
  EXPECT_EQ(model_bytes(*m, "f16"), s.matrix_params * 2 + vectors);
  EXPECT_EQ(model_bytes(*m, "bf16"), s.matrix_params * 2 + vectors);
  EXPECT_EQ(model_bytes(*m, "q8_0"), s.matrix_params / 32 * 34 + vectors);
  // llama-quantize's Q4_0 stores the output in q6_K.
  const int64_t output = 4096 * 32000;
  EXPECT_EQ(model_bytes(*m, "q4_0"), (s.matrix_params - output) / 32 * 18 + output / 256 * 210 + vectors);
  EXPECT_EQ(model_bytes(*m, "Q6_K"), s.matrix_params / 256 * 210 + vectors);
  EXPECT_EQ(model_bytes(*m, "q4_k"), model_bytes(*m, "q4_k_m"));  // an alias, as in llama-quantize
}

TEST(WeightFormat, KMixPutsSomeTensorsInQ6K) {
  auto m = plan_preset("llama-2-7b");
  ASSERT_TRUE(m.ok());
  PlanOptions o;
  o.weights = *weight_format_from_name("q4_k_m");
  auto p = compute_plan(*m, o);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->weight_types.size(), 3u);  // q4_K, q6_K, f32 norms
  EXPECT_EQ(p->weight_types[0].type, "q4_K");
  EXPECT_EQ(p->weight_types[1].type, "q6_K");
  // 32 blocks: 0-3, 28-31 and every third between (6, 9, ..., 27) = 16 blocks x
  // (attn_v, ffn_down), plus output.
  EXPECT_EQ(p->weight_types[1].n_tensors, 16 * 2 + 1);
  EXPECT_GT(p->weight_bytes_model, model_bytes(*m, "q4_k_s"));
  EXPECT_LT(p->weight_bytes_model, model_bytes(*m, "q6_k"));
  ASSERT_FALSE(p->notes.empty());
  EXPECT_NE(p->notes.front().find("llama-quantize"), std::string::npos);
}

// llama.cpp stores q4_K rows that are not whole 256-blocks in q5_0 (llama_tensor_get_type's
// convert_incompatible_tensor), not in f16.
TEST(WeightFormat, RowsThatDoNotFillBlocksFallBackAsLlamaCppDoes) {
  auto m = plan_preset("qwen2.5-0.5b");  // n_embd 896 = 3.5 blocks of 256; ffn_down 4864 = 19
  ASSERT_TRUE(m.ok());
  const auto f = *weight_format_from_name("q4_k_m");
  auto type_of = [&](const char* name) {
    for (const auto& t : m->tensors)
      if (t.name == name) return weight_format_tensor_type(f, t, *m);
    ADD_FAILURE() << name;
    return DType::kF32;
  };
  EXPECT_EQ(type_of("blk.3.attn_q.weight"), DType::kQ5_0);    // q4_K -> q5_0
  EXPECT_EQ(type_of("blk.0.attn_v.weight"), DType::kQ8_0);    // q6_K -> q8_0
  EXPECT_EQ(type_of("token_embd.weight"), DType::kQ8_0);      // the tied output: q8_0 directly
  EXPECT_EQ(type_of("blk.4.ffn_down.weight"), DType::kQ4_K);  // rows of 4864 = 19 blocks
  PlanOptions o;
  o.weights = f;
  auto p = compute_plan(*m, o);
  ASSERT_TRUE(p.ok());
  bool noted = false;
  for (const auto& n : p->notes) noted |= n.find("fallback type") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(WeightFormat, NamesAndDefaults) {
  EXPECT_EQ(weight_format_from_name("Q4_K_M")->file_type.name, "Q4_K_M");
  EXPECT_EQ(weight_format_from_name("q3_k")->file_type.name, "Q3_K_M");
  EXPECT_TRUE(weight_format_from_name("file")->from_file);
  EXPECT_EQ(weight_format_from_name("q8_0")->base, DType::kQ8_0);
  auto bad = weight_format_from_name("q7_x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("q7_x"), std::string::npos);
  EXPECT_FALSE(weight_format_from_name("i32").ok());
  auto m = plan_preset("llama-3-8b");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(weight_format_native(*m).base, DType::kBF16);
  EXPECT_EQ(weight_format_native(*m).name, "bf16");
}

}  // namespace
}  // namespace tally::plan
