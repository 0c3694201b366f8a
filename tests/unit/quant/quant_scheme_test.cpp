// The per-tensor types of each scheme follow llama.cpp's llama-quantize rules
// (llama_tensor_get_type).
#include "quant/quant_scheme.h"

#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "plan/llama_quant_rules.h"
#include "plan/plan_presets.h"
#include "plan/weight_format.h"

namespace tally::quant {
namespace {

QuantScheme scheme(const char* name) {
  auto s = quant_scheme_from_name(name);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return *s;
}

plan::PlanModel preset(const char* name) {
  auto m = plan::plan_preset(name);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return *m;
}

// Type of every tensor of `m` by name.
std::map<std::string, DType> types_of(const QuantScheme& s, const plan::PlanModel& m) {
  std::map<std::string, DType> out;
  for (const auto& t : m.tensors) {
    auto type = quant_scheme_tensor_type(s, t, m);
    EXPECT_TRUE(type.ok()) << type.status().to_string();
    if (type.ok()) out[t.name] = *type;
  }
  return out;
}

TEST(QuantScheme, NamesAliasesAndLlamaCppFileTypes) {
  EXPECT_EQ(scheme("f32").file_type, 0u);
  EXPECT_EQ(scheme("F16").file_type, 1u);
  EXPECT_EQ(scheme("q4_0").file_type, 2u);
  EXPECT_EQ(scheme("q8_0").file_type, 7u);
  EXPECT_EQ(scheme("q4_k_m").file_type, 15u);
  EXPECT_EQ(scheme("bf16").file_type, 32u);
  const QuantScheme k = scheme("Q4_K");
  EXPECT_EQ(k.name, "q4_k_m");
  EXPECT_EQ(k.llama.name, "Q4_K_M");
  EXPECT_EQ(k.base, DType::kQ4_K);
  EXPECT_EQ(scheme("q4_1").file_type, 3u);
  EXPECT_EQ(scheme("q5_0").file_type, 8u);
  EXPECT_EQ(scheme("q5_1").file_type, 9u);
  EXPECT_EQ(scheme("q2_k").file_type, 10u);
  EXPECT_EQ(scheme("q3_k_s").file_type, 11u);
  EXPECT_EQ(scheme("q3_k").file_type, 12u);  // = Q3_K_M, as llama-quantize
  EXPECT_EQ(scheme("q3_k_l").file_type, 13u);
  EXPECT_EQ(scheme("q4_k_s").file_type, 14u);
  EXPECT_EQ(scheme("q5_k_s").file_type, 16u);
  EXPECT_EQ(scheme("q6_k").file_type, 18u);
  const QuantScheme k5 = scheme("Q5_K");
  EXPECT_EQ(k5.name, "q5_k_m");
  EXPECT_EQ(k5.file_type, 17u);
  EXPECT_EQ(k5.base, DType::kQ5_K);
  EXPECT_EQ(scheme("iq4_nl").file_type, 25u);
  EXPECT_EQ(scheme("iq4_xs").file_type, 30u);
  const auto unknown = quant_scheme_from_name("iq2_xs");
  ASSERT_FALSE(unknown.ok());
  for (const char* name : {"'iq2_xs'", "Q4_K_M", "Q3_K_S", "IQ4_NL", "Q4_K = Q4_K_M"})
    EXPECT_NE(unknown.status().message().find(name), std::string::npos) << name;
  EXPECT_FALSE(quant_scheme_from_name("").ok());
  EXPECT_TRUE(quant_scheme_is_quantized(scheme("q8_0")));
  EXPECT_FALSE(quant_scheme_is_quantized(scheme("bf16")));
}

TEST(QuantScheme, UseMoreBitsMatchesLlamaCppForThirtyTwoLayers) {
  // n/8 = 4: layers 0-3 and 28-31, and (i - 4) % 3 == 2 between: 6, 9, ..., 27.
  std::vector<int> more;
  for (int i = 0; i < 32; ++i)
    if (plan::llama_quant_more_bits_layer(i, 32)) more.push_back(i);
  const std::vector<int> expected = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
  EXPECT_EQ(more, expected);
}

TEST(QuantScheme, Q4KmMixOnLlama2_7b) {
  const auto m = preset("llama-2-7b");
  const auto types = types_of(scheme("q4_k_m"), m);
  EXPECT_EQ(types.at("token_embd.weight"), DType::kQ4_K);
  EXPECT_EQ(types.at("output.weight"), DType::kQ6_K);
  EXPECT_EQ(types.at("output_norm.weight"), DType::kF32);
  EXPECT_EQ(types.at("blk.0.attn_norm.weight"), DType::kF32);
  int n_q6 = 0;
  for (int i = 0; i < 32; ++i) {
    const DType more = plan::llama_quant_more_bits_layer(i, 32) ? DType::kQ6_K : DType::kQ4_K;
    const auto name = [i](const char* w) { return fmt::format("blk.{}.{}.weight", i, w); };
    EXPECT_EQ(types.at(name("attn_v")), more) << i;
    EXPECT_EQ(types.at(name("ffn_down")), more) << i;
    for (const char* w : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"})
      EXPECT_EQ(types.at(name(w)), DType::kQ4_K) << name(w);
    n_q6 += more == DType::kQ6_K;
  }
  EXPECT_EQ(n_q6, 16);
}

TEST(QuantScheme, OutputGetsQ6KUnderQ4_0ButQ8_0StaysQ8_0) {
  const auto m = preset("tinyllama-1.1b");
  const auto q4 = types_of(scheme("q4_0"), m);
  EXPECT_EQ(q4.at("output.weight"), DType::kQ6_K);
  EXPECT_EQ(q4.at("token_embd.weight"), DType::kQ4_0);
  EXPECT_EQ(q4.at("blk.5.attn_v.weight"), DType::kQ4_0);  // no mix outside *_k_m
  EXPECT_EQ(q4.at("blk.0.ffn_down.weight"), DType::kQ4_0);
  const auto q8 = types_of(scheme("q8_0"), m);
  for (const auto& [name, type] : q8) {
    EXPECT_EQ(type, name.find("norm") != std::string::npos ? DType::kF32 : DType::kQ8_0) << name;
  }
}

TEST(QuantScheme, FloatSchemesKeepEveryMatrixInTheirType) {
  const auto m = preset("qwen2.5-0.5b");
  for (const char* name : {"f32", "f16", "bf16"}) {
    const QuantScheme s = scheme(name);
    for (const auto& [tensor, type] : types_of(s, m)) {
      const bool vector = tensor.find("norm") != std::string::npos || tensor.find("bias") != std::string::npos;
      EXPECT_EQ(type, vector ? DType::kF32 : s.base) << name << " " << tensor;
    }
  }
}

TEST(QuantScheme, TiedEmbeddingIsTheOutputAndRowsOf896FallBack) {
  const auto m = preset("qwen2.5-0.5b");  // n_embd 896 = 3.5 x 256, tied, n_ff 4864 = 19 x 256
  const auto km = types_of(scheme("q4_k_m"), m);
  EXPECT_EQ(m.tensors.end(), std::find_if(m.tensors.begin(), m.tensors.end(),
                                          [](const auto& t) { return t.name == "output.weight"; }));
  EXPECT_EQ(km.at("token_embd.weight"), DType::kQ8_0);   // output-like, 896 % 256 != 0
  EXPECT_EQ(km.at("blk.3.attn_q.weight"), DType::kQ5_0); // q4_K -> q5_0, as llama.cpp
  EXPECT_EQ(km.at("blk.0.attn_v.weight"), DType::kQ8_0); // q6_K -> q8_0
  EXPECT_EQ(km.at("blk.0.ffn_down.weight"), DType::kQ6_K);  // rows of 4864 fit
  EXPECT_EQ(km.at("blk.4.ffn_down.weight"), DType::kQ4_K);
  EXPECT_EQ(km.at("blk.3.attn_output.weight"), DType::kQ5_0);  // rows of 14 x 64 = 896
  const auto k5 = types_of(scheme("q5_k_m"), m);
  EXPECT_EQ(k5.at("blk.3.attn_q.weight"), DType::kQ5_1);  // q5_K -> q5_1
  EXPECT_EQ(k5.at("blk.4.ffn_down.weight"), DType::kQ5_K);
  const auto k2 = types_of(scheme("q2_k"), m);
  EXPECT_EQ(k2.at("blk.3.attn_q.weight"), DType::kQ4_0);  // q2_K -> q4_0, as llama.cpp v0.5.0
  EXPECT_EQ(k2.at("blk.4.ffn_down.weight"), DType::kQ3_K);  // Q2_K's mix: ffn_down q3_K
  EXPECT_EQ(km.at("blk.3.attn_q.bias"), DType::kF32);
  const auto q4 = types_of(scheme("q4_0"), m);
  EXPECT_EQ(q4.at("token_embd.weight"), DType::kQ8_0);  // q6_K does not fit 896: q8_0
  EXPECT_EQ(q4.at("blk.3.attn_q.weight"), DType::kQ4_0);

  const auto llama32 = types_of(scheme("q4_k_m"), preset("llama-3.2-1b"));  // tied, 2048 wide
  EXPECT_EQ(llama32.at("token_embd.weight"), DType::kQ6_K);
}

// llama.cpp keeps such a tensor in f16 rather than refusing the file (tests/llamacpp checks
// the rule against its quantizer).
TEST(QuantScheme, RowsThatAreNotWholeBlocksOfABaseTypeFallBackToF16) {
  plan::PlanModel m;
  m.name = "odd";
  m.architecture = "llama";
  m.n_layers = 1;
  m.n_embd = 48;
  m.n_heads = 1;
  m.n_kv_heads = 1;
  m.head_dim = 48;
  m.n_ff = 64;
  m.n_vocab = 10;
  m.context_length = 16;
  auto finished = plan::plan_model_finish(m);
  ASSERT_TRUE(finished.ok());
  int checked = 0;
  for (const auto& t : finished->tensors) {
    if (t.name != "blk.0.attn_q.weight") continue;
    ++checked;
    auto type = quant_scheme_tensor_type(scheme("q4_0"), t, *finished);  // 48 % 32 != 0
    ASSERT_TRUE(type.ok()) << type.status().to_string();
    EXPECT_EQ(*type, DType::kF16);
    auto f16 = quant_scheme_tensor_type(scheme("q4_k_m"), t, *finished);  // q4_K -> q8_0 -> f16
    ASSERT_TRUE(f16.ok());
    EXPECT_EQ(*f16, DType::kF16);
  }
  EXPECT_EQ(checked, 1);
}

// The planner (plan/weight_format.h) and this writer share llama.cpp's rules: they give every
// tensor the same type.
TEST(QuantScheme, AgreesWithThePlannerOnEveryTensor) {
  for (const char* mix : {"q4_0", "q2_k", "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m",
                          "q6_k", "iq4_xs"}) {
    const auto format = plan::weight_format_from_name(mix);
    ASSERT_TRUE(format.ok());
    for (const char* name : {"qwen2.5-0.5b", "llama-3.2-1b", "llama-2-7b"}) {
      const plan::PlanModel m = preset(name);
      for (const auto& t : m.tensors) {
        const auto written = quant_scheme_tensor_type(scheme(mix), t, m);
        ASSERT_TRUE(written.ok()) << written.status().to_string();
        EXPECT_EQ(*written, plan::weight_format_tensor_type(*format, t, m))
            << mix << " " << name << " " << t.name;
      }
    }
  }
}

}  // namespace
}  // namespace tally::quant
