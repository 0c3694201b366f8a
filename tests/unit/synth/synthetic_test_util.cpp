#include "synthetic_test_util.h"

#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "io/gguf_writer.h"

namespace tally_test {

tally::synth::SyntheticModelSpec tiny_spec(int64_t n_layers, int64_t n_vocab, bool qwen2) {
  tally::plan::PlanModel m;
  m.name = qwen2 ? "tiny-qwen2" : "tiny-llama";
  m.source = "test";
  m.architecture = qwen2 ? "qwen2" : "llama";
  m.n_layers = n_layers;
  m.n_embd = 256;
  m.n_heads = 4;
  m.n_kv_heads = 2;
  m.head_dim = 64;
  m.n_ff = 512;
  m.n_vocab = n_vocab;
  m.context_length = 512;
  m.tied_embeddings = qwen2;
  m.qkv_bias = qwen2;
  auto finished = tally::plan::plan_model_finish(m);
  EXPECT_TRUE(finished.ok()) << finished.status().to_string();
  tally::synth::SyntheticModelSpec spec;
  spec.shape = std::move(finished).value();
  spec.rope_freq_base = qwen2 ? 1e6f : 10000.0f;
  spec.rms_norm_eps = qwen2 ? 1e-6f : 1e-5f;
  return spec;
}

std::string write_tiny_vocab(const std::string& dir, int64_t n_tokens) {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (int64_t i = 0; i < n_tokens; ++i) {
    tokens.push_back(fmt::format("tok{}", i));
    scores.push_back(-static_cast<float>(i));
    types.push_back(i < 3 ? 3 : 1);
  }
  tally::io::GgufWriter w;
  w.set_string("general.architecture", "llama");  // a vocab file's own; must not be copied
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  const std::string path = fmt::format("{}/vocab{}.gguf", dir, n_tokens);
  const auto st = w.write(path);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return path;
}

}  // namespace tally_test
