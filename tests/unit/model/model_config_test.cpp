// ModelConfig and weight binding from GGUF metadata: values, defaults, and a Status naming
// every missing or inconsistent key or tensor.
#include <gtest/gtest.h>

#include "io/gguf.h"
#include "model/model.h"
#include "tiny_model.h"

namespace tally_test {
namespace {

using tally::ErrorCode;
using tally::Model;

struct Loaded {
  std::vector<uint8_t> bytes;  // outlives the model
  tally::Result<std::unique_ptr<Model>> model = tally::Status(ErrorCode::kInternal, "unset");
};

std::unique_ptr<Loaded> load(const TinySpec& spec) {
  auto out = std::make_unique<Loaded>();
  out->bytes = make_tiny_gguf(spec);
  auto gguf = tally::io::GgufFile::parse(out->bytes);
  EXPECT_TRUE(gguf.ok()) << gguf.status().to_string();
  if (gguf.ok()) out->model = Model::from_gguf(std::move(gguf).value());
  return out;
}

void expect_error(const TinySpec& spec, ErrorCode code, const std::string& needle) {
  const auto l = load(spec);
  ASSERT_FALSE(l->model.ok()) << "expected an error mentioning " << needle;
  EXPECT_EQ(l->model.status().code(), code) << l->model.status().to_string();
  EXPECT_NE(l->model.status().message().find(needle), std::string::npos) << l->model.status().to_string();
}

TEST(ModelConfig, ReadsEveryValue) {
  TinySpec spec;
  spec.freq_base = 5000.0f;
  spec.eps = 1e-6f;
  const auto l = load(spec);
  ASSERT_TRUE(l->model.ok()) << l->model.status().to_string();
  const auto& c = (*l->model)->config();
  EXPECT_EQ(c.arch->name, "llama");
  EXPECT_EQ(c.n_vocab, 40);
  EXPECT_EQ(c.n_embd, 32);
  EXPECT_EQ(c.n_ff, 48);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_EQ(c.context_length, 256);
  EXPECT_EQ(c.rope_freq_base, 5000.0f);
  EXPECT_EQ(c.norm_eps, 1e-6f);
  EXPECT_EQ(c.rope_scaling.type, tally::RopeScalingType::kNone);
  EXPECT_FALSE(c.tied_output);
  EXPECT_EQ((*l->model)->weights().layers.size(), 2u);
}

TEST(ModelConfig, Defaults) {
  TinySpec spec;
  spec.n_kv_heads = spec.n_heads;  // head_count_kv defaults to head_count
  spec.skip_keys = {"attention.head_count_kv", "attention.key_length", "rope.dimension_count", "rope.freq_base"};
  const auto l = load(spec);
  ASSERT_TRUE(l->model.ok()) << l->model.status().to_string();
  const auto& c = (*l->model)->config();
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);  // embedding_length / head_count
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_EQ(c.rope_freq_base, 10000.0f);
}

TEST(ModelConfig, MissingKeysAreNamed) {
  for (const char* key : {"context_length", "embedding_length", "feed_forward_length", "block_count",
                          "attention.head_count", "attention.layer_norm_rms_epsilon"}) {
    TinySpec spec;
    spec.skip_keys = {key};
    expect_error(spec, ErrorCode::kNotFound, std::string("llama.") + key);
  }
}

TEST(ModelConfig, UnsupportedArchitecture) {
  TinySpec spec;
  spec.arch = "gpt2";
  expect_error(spec, ErrorCode::kUnsupported, "'gpt2'");
}

TEST(ModelConfig, InconsistentValues) {
  TinySpec heads;
  heads.n_kv_heads = 3;
  expect_error(heads, ErrorCode::kFormat, "head_count_kv 3");
  TinySpec rope;
  rope.extra = [](tally::io::GgufWriter& w) { w.set_u32("llama.rope.dimension_count", 10); };
  rope.skip_keys = {"rope.dimension_count"};
  expect_error(rope, ErrorCode::kFormat, "rope.dimension_count 10");
  TinySpec dynamic;  // dynamic NTK scaling is not implemented (yarn is: rope_scaling_test.cpp)
  dynamic.extra = [](tally::io::GgufWriter& w) { w.set_string("llama.rope.scaling.type", "dynamic"); };
  expect_error(dynamic, ErrorCode::kUnsupported, "dynamic");
  TinySpec vlen;
  vlen.extra = [](tally::io::GgufWriter& w) { w.set_u32("llama.attention.value_length", 16); };
  expect_error(vlen, ErrorCode::kUnsupported, "value_length 16");
  TinySpec vocab;
  vocab.extra = [](tally::io::GgufWriter& w) { w.set_u32("llama.vocab_size", 41); };
  expect_error(vocab, ErrorCode::kFormat, "llama.vocab_size");
}

TEST(ModelWeights, MissingTensorsAreNamed) {
  for (const char* name : {"token_embd.weight", "output_norm.weight", "blk.1.ffn_up.weight", "blk.0.attn_k.weight",
                           "blk.1.attn_norm.weight"}) {
    TinySpec spec;
    spec.skip_tensors = {name};
    expect_error(spec, ErrorCode::kNotFound, std::string("'") + name + "'");
  }
  TinySpec qwen;
  qwen.arch = "qwen2";
  qwen.biases = true;
  qwen.skip_tensors = {"blk.1.attn_v.bias"};
  expect_error(qwen, ErrorCode::kNotFound, "'blk.1.attn_v.bias'");
}

TEST(ModelWeights, WrongShapeIsNamed) {
  TinySpec spec;
  spec.skip_tensors = {"blk.0.ffn_down.weight"};
  spec.extra = [](tally::io::GgufWriter& w) {
    std::vector<float> zeros(32 * 48);
    const auto st = w.add_tensor("blk.0.ffn_down.weight", tally::DType::kF32, {32, 48},
                                 {reinterpret_cast<const uint8_t*>(zeros.data()), zeros.size() * 4});
    EXPECT_TRUE(st.ok());
  };
  expect_error(spec, ErrorCode::kFormat, "'blk.0.ffn_down.weight' has shape [32, 48], expected [48, 32]");
}

TEST(ModelWeights, TiedOutputAndConvertedVectors) {
  TinySpec spec;
  spec.tied = true;
  spec.vector_type = tally::DType::kBF16;
  const auto l = load(spec);
  ASSERT_TRUE(l->model.ok()) << l->model.status().to_string();
  const auto& m = **l->model;
  EXPECT_TRUE(m.config().tied_output);
  EXPECT_EQ(m.weights().output.data, m.weights().token_embd.data);
  EXPECT_EQ(m.weights().owned_bytes, (1 + 2 * 2) * 32 * 4);  // output_norm + 2 norms per layer
}

}  // namespace
}  // namespace tally_test
