#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "plan/gguf_source.h"
#include "plan/hf_config.h"
#include "plan/model_spec.h"
#include "plan/plan.h"
#include "plan/plan_presets.h"
#include "plan/plan_report.h"
#include "support/test_data.h"

namespace tally::plan {
namespace {

// Meta-Llama-3-8B's config.json (fields as published).
constexpr const char* kLlama3Config = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 8192,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})";

// Qwen2.5-0.5B's config.json (fields as published).
constexpr const char* kQwen2Config = R"({
  "architectures": ["Qwen2ForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151643,
  "hidden_act": "silu",
  "hidden_size": 896,
  "initializer_range": 0.02,
  "intermediate_size": 4864,
  "max_position_embeddings": 32768,
  "max_window_layers": 24,
  "model_type": "qwen2",
  "num_attention_heads": 14,
  "num_hidden_layers": 24,
  "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.1",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = tally_test::temp_dir() + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

void expect_same_shapes(const PlanModel& a, const PlanModel& b) {
  EXPECT_EQ(a.architecture, b.architecture);
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.n_embd, b.n_embd);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.n_ff, b.n_ff);
  EXPECT_EQ(a.n_vocab, b.n_vocab);
  EXPECT_EQ(a.context_length, b.context_length);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  EXPECT_EQ(a.qkv_bias, b.qkv_bias);
  EXPECT_EQ(a.native_type, b.native_type);
  EXPECT_EQ(a.n_params(), b.n_params());
}

TEST(HfConfig, Llama3ConfigMatchesThePreset) {
  const std::string path = write_temp("llama3/config.json", kLlama3Config);
  auto m = plan_model_from_hf_config(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->source, "hf-config");
  EXPECT_EQ(m->name, path);
  expect_same_shapes(*m, *plan_preset("llama-3-8b"));
  auto p = compute_plan(*m, PlanOptions{});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->kv_bytes_per_token, 128 * 1024);
}

TEST(HfConfig, Qwen2ConfigHasBiasesAndTiedEmbeddings) {
  auto m = plan_model_from_hf_config_text(kQwen2Config, "qwen2/config.json");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_TRUE(m->qkv_bias);  // implied by model_type qwen2
  EXPECT_TRUE(m->tied_embeddings);
  EXPECT_EQ(m->head_dim, 64);
  EXPECT_EQ(m->n_params(), 494'032'768);
  expect_same_shapes(*m, *plan_preset("qwen2.5-0.5b"));
}

TEST(HfConfig, ExplicitHeadDimAndDefaults) {
  auto m = plan_model_from_hf_config_text(
      R"({"hidden_size": 3072, "num_hidden_layers": 2, "num_attention_heads": 24,
          "head_dim": 256, "intermediate_size": 8192, "vocab_size": 1000,
          "max_position_embeddings": 4096})",
      "cfg");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->head_dim, 256);          // not 3072 / 24 = 128
  EXPECT_EQ(m->n_kv_heads, 24);         // defaults to the attention heads
  EXPECT_FALSE(m->tied_embeddings);
  EXPECT_FALSE(m->native_type.has_value());
  EXPECT_EQ(m->architecture, "llama");
}

TEST(HfConfig, BadFieldsAreNamed) {
  struct Case {
    std::string text;
    std::string needle;
  };
  const std::string llama = kLlama3Config;
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string s = llama;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  const Case cases[] = {
      {edit("\"vocab_size\": 128256", "\"vocab\": 128256"), "missing field 'vocab_size'"},
      {edit("\"hidden_size\": 4096", "\"hidden_size\": \"4096\""), "'hidden_size'"},
      {edit("\"num_hidden_layers\": 32", "\"num_hidden_layers\": 0"), "'num_hidden_layers'"},
      {edit("\"intermediate_size\": 14336", "\"intermediate_size\": 1.5"), "'intermediate_size'"},
      {edit("\"tie_word_embeddings\": false", "\"tie_word_embeddings\": 0"),
       "'tie_word_embeddings'"},
      {edit("\"torch_dtype\": \"bfloat16\"", "\"torch_dtype\": \"float8\""), "'torch_dtype'"},
      {edit("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5"), "num_key_value_heads 5"},
      {"{\"hidden_size\": 4096,", "not valid JSON"},
      {"[1, 2]", "JSON object"},
  };
  for (const auto& c : cases) {
    auto m = plan_model_from_hf_config_text(c.text, "bad.json");
    ASSERT_FALSE(m.ok()) << c.needle;
    EXPECT_NE(m.status().message().find(c.needle), std::string::npos) << m.status().message();
    EXPECT_NE(m.status().message().find("bad.json"), std::string::npos);
  }
  auto missing = plan_model_from_hf_config(tally_test::temp_dir() + "/nope/config.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
}

TEST(ModelSpec, PresetFileAndFolder) {
  auto preset = plan_model_from_spec("tinyllama-1.1b");
  ASSERT_TRUE(preset.ok());
  EXPECT_EQ(preset->source, "preset");
  const std::string path = write_temp("qwen-folder/config.json", kQwen2Config);
  auto file = plan_model_from_spec(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(file->source, "hf-config");
  auto folder = plan_model_from_spec(tally_test::temp_dir() + "/qwen-folder");
  ASSERT_TRUE(folder.ok()) << folder.status().to_string();
  EXPECT_EQ(folder->n_embd, 896);
  auto no_file = plan_model_from_spec("/nonexistent/model.gguf");
  ASSERT_FALSE(no_file.ok());
  EXPECT_NE(no_file.status().message().find("no such file"), std::string::npos);
  auto unknown = plan_model_from_spec("gpt-17");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kNotFound);
}

TEST(GgufSource, Stories260K) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", path);
  auto m = plan_model_from_spec(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->source, "gguf");
  EXPECT_EQ(m->architecture, "llama");
  EXPECT_EQ(m->n_layers, 5);
  EXPECT_EQ(m->n_embd, 64);
  EXPECT_EQ(m->n_heads, 8);
  EXPECT_EQ(m->n_kv_heads, 4);
  EXPECT_EQ(m->head_dim, 8);
  EXPECT_EQ(m->n_ff, 172);
  EXPECT_EQ(m->n_vocab, 512);
  EXPECT_EQ(m->context_length, 2048);
  EXPECT_FALSE(m->tied_embeddings);  // the conversion wrote output.weight
  EXPECT_FALSE(m->qkv_bias);
  ASSERT_EQ(m->tensors.size(), 48u);
  ASSERT_TRUE(m->has_file_bytes());
  // embd + output 512*64 each, 5 blocks of (2 norms, q, k, v, o, 3 ffn), final norm.
  const int64_t params = 2 * 512 * 64 + 5 * (2 * 64 + 64 * 64 + 2 * 64 * 32 + 64 * 64 +
                                             3 * 64 * 172) + 64;
  EXPECT_EQ(m->n_params(), params);
  EXPECT_EQ(m->file_weight_bytes(), params * 4);  // all f32
  // Every tensor of the file is recognised.
  for (const auto& t : m->tensors) EXPECT_NE(t.role, TensorRole::kOther) << t.name;

  auto p = compute_plan(*m, PlanOptions{});
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->options.weights->name, "file");
  EXPECT_EQ(p->weight_bytes, params * 4);
  ASSERT_EQ(p->weight_types.size(), 1u);
  EXPECT_EQ(p->weight_types[0].type, "f32");
  EXPECT_EQ(p->weight_types[0].n_tensors, 48);
  EXPECT_EQ(p->kv_bytes_per_token, 2 * 5 * 4 * 8 * 2);  // 640 B in f16
  // q8_0 / q4_0 KV: each 8-value head one block of its own, 2 + 8 and 2 + 4 bytes.
  for (auto [type, row] : {std::pair{DType::kQ8_0, 4 * 10}, {DType::kQ4_0, 4 * 6}}) {
    PlanOptions kv;
    kv.kv_type = type;
    auto pk = compute_plan(*m, kv);
    ASSERT_TRUE(pk.ok()) << pk.status().to_string();
    EXPECT_EQ(pk->kv_bytes_per_token, 2 * 5 * row) << dtype_name(type);
    const std::string value = fmt::format("x {:g} B ({})", row / 32.0, dtype_name(type));  // 10/8, 6/8
    EXPECT_NE(plan_table(*pk).find(value), std::string::npos) << value << "\n" << plan_table(*pk);
  }

  // Re-planned in q8_0: rows of 64 fill 2 blocks; ffn_down rows of 172 do not (f16).
  PlanOptions q8;
  q8.weights = *weight_format_from_name("q8_0");
  auto pq = compute_plan(*m, q8);
  ASSERT_TRUE(pq.ok());
  EXPECT_LT(pq->weight_bytes, p->weight_bytes / 3);
  // tp 2 splits the file's tensors too.
  PlanOptions tp2;
  tp2.tp = 2;
  auto pt = compute_plan(*m, tp2);
  ASSERT_TRUE(pt.ok()) << pt.status().to_string();
  EXPECT_EQ(pt->kv_bytes_per_token, 320);
  EXPECT_EQ(pt->weight_bytes, (params - 11 * 64) * 4 / 2 + 11 * 64 * 4);
}

}  // namespace
}  // namespace tally::plan
