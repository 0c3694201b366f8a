// write_synthetic_model: files of every type re-open with the right metadata, shapes, types
// and sizes, hold the same seeded weights (up to each type's rounding), are byte-identical
// for a seed whatever the thread count, and carry the q4_k_m mix.
#include "synth/synthetic_model.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "io/gguf.h"
#include "support/test_data.h"
#include "synthetic_test_util.h"
#include "tensor/quantize.h"

namespace tally::synth {
namespace {

struct Written {
  std::string path;
  SyntheticSummary summary;
};

Written write(const SyntheticModelSpec& spec, const std::string& type, uint64_t seed, int threads,
              int64_t vocab_tokens, const std::string& tag) {
  SyntheticOptions o;
  o.spec = spec;
  o.type = type;
  o.seed = seed;
  o.n_threads = threads;
  o.vocab_gguf = tally_test::write_tiny_vocab(tally_test::temp_dir(), vocab_tokens);
  o.output_path = fmt::format("{}/{}_{}_{}_{}.gguf", tally_test::temp_dir(), spec.shape.name, type, seed, tag);
  auto s = write_synthetic_model(o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return {o.output_path, s.ok() ? *s : SyntheticSummary{}};
}

io::GgufFile open(const std::string& path) {
  auto f = io::GgufFile::open(path);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  return std::move(f).value();
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Row r of a tensor as floats.
std::vector<float> row_of(const io::GgufTensorInfo& t, int64_t r) {
  const int64_t row_bytes = dtype_row_bytes(t.type, t.dims[0]);
  std::vector<float> out(static_cast<size_t>(t.dims[0]));
  dequantize_row(t.type, t.data + r * row_bytes, out.data(), t.dims[0]);
  return out;
}

double rms(const std::vector<float>& v, float center) {
  double s = 0.0;
  for (float x : v) s += (x - center) * (x - center);
  return std::sqrt(s / v.size());
}

TEST(SyntheticModel, EveryTypeReopensWithMetadataShapesTypesAndSizes) {
  const SyntheticModelSpec spec = tally_test::tiny_spec(2, 300);
  for (const char* type : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k",
                           "iq4_nl", "iq4_xs", "q4_k_m", "q5_k_m"}) {
    SCOPED_TRACE(type);
    const Written w = write(spec, type, 7, 2, 260, "meta");
    const io::GgufFile f = open(w.path);
    const quant::QuantScheme scheme = *quant::quant_scheme_from_name(type);
    EXPECT_EQ(*f.get_string("general.architecture"), "llama");
    EXPECT_EQ(*f.get_string("general.type"), "model");
    EXPECT_EQ(*f.get_int("general.file_type"), scheme.file_type);
    EXPECT_EQ(*f.get_int("general.quantization_version"), 2);
    EXPECT_EQ(*f.get_int("llama.block_count"), 2);
    EXPECT_EQ(*f.get_int("llama.context_length"), 512);
    EXPECT_EQ(*f.get_int("llama.embedding_length"), 256);
    EXPECT_EQ(*f.get_int("llama.feed_forward_length"), 512);
    EXPECT_EQ(*f.get_int("llama.attention.head_count"), 4);
    EXPECT_EQ(*f.get_int("llama.attention.head_count_kv"), 2);
    EXPECT_EQ(*f.get_int("llama.rope.dimension_count"), 64);
    EXPECT_EQ(*f.get_int("llama.vocab_size"), 300);
    EXPECT_FLOAT_EQ(static_cast<float>(*f.get_float("llama.rope.freq_base")), 10000.0f);
    EXPECT_FLOAT_EQ(static_cast<float>(*f.get_float("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
    EXPECT_EQ(f.find("llama.attention.key_length"), nullptr);
    EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens")->size(), 300u);
    EXPECT_EQ(w.summary.n_placeholder_tokens, 40);

    const auto want = synthetic_tensors(spec, scheme);
    ASSERT_TRUE(want.ok());
    ASSERT_EQ(f.tensors().size(), want->size());
    ASSERT_EQ(f.tensors().size(), 21u);  // token_embd, 2 x 9 per block, output_norm, output
    int64_t n_params = 0;
    for (size_t i = 0; i < want->size(); ++i) {
      const auto& got = f.tensors()[i];
      const auto& t = (*want)[i];
      EXPECT_EQ(got.name, t.shape.name);
      EXPECT_EQ(got.dims, t.dims) << t.shape.name;
      EXPECT_EQ(got.type, t.type) << t.shape.name;
      const int64_t rows = t.dims.size() == 2 ? t.dims[1] : 1;
      EXPECT_EQ(got.n_bytes, static_cast<uint64_t>(dtype_row_bytes(t.type, t.dims[0]) * rows)) << t.shape.name;
      if (t.dims.size() == 1) {
        EXPECT_EQ(got.type, DType::kF32) << t.shape.name;
      }
      n_params += got.n_elements();
    }
    EXPECT_EQ(f.find_tensor("token_embd.weight")->dims, (std::vector<int64_t>{256, 300}));
    EXPECT_EQ(f.find_tensor("blk.1.attn_k.weight")->dims, (std::vector<int64_t>{256, 128}));
    EXPECT_EQ(f.find_tensor("blk.1.ffn_down.weight")->dims, (std::vector<int64_t>{512, 256}));
    EXPECT_EQ(w.summary.n_params, n_params);
    EXPECT_EQ(w.summary.file_bytes, f.file_size());
    std::remove(w.path.c_str());
  }
}

TEST(SyntheticModel, ValuesHaveTheAskedStdAndAgreeAcrossTypes) {
  const SyntheticModelSpec spec = tally_test::tiny_spec(2, 300);
  const Written ref = write(spec, "f32", 11, 1, 300, "vals");
  const io::GgufFile f32 = open(ref.path);
  // Relative rms error of a type's rounding, bounded loosely.
  const std::pair<const char*, double> types[] = {{"f16", 1e-3},   {"bf16", 8e-3},  {"q8_0", 0.02},
                                                  {"q4_0", 0.2},   {"q4_1", 0.2},   {"q5_0", 0.1},
                                                  {"q5_1", 0.1},   {"q2_k", 0.6},   {"q3_k", 0.4},
                                                  {"iq4_nl", 0.2}, {"iq4_xs", 0.2},
                                                  {"q4_k_m", 0.2}, {"q5_k_m", 0.1}};
  for (const auto& [type, max_rel] : types) {
    SCOPED_TRACE(type);
    const Written w = write(spec, type, 11, 2, 300, "vals");
    const io::GgufFile f = open(w.path);
    for (const char* name : {"token_embd.weight", "blk.0.attn_q.weight", "blk.1.ffn_down.weight", "output.weight",
                             "blk.1.ffn_norm.weight"}) {
      const auto* a = f32.find_tensor(name);
      const auto* b = f.find_tensor(name);
      ASSERT_TRUE(a && b) << name;
      const bool norm = std::string(name).find("norm") != std::string::npos;
      for (int64_t r : {int64_t{0}, a->dims.size() == 2 ? a->dims[1] - 1 : 0}) {
        const auto x = row_of(*a, r);
        const auto y = row_of(*b, r);
        EXPECT_NEAR(rms(x, norm ? 1.0f : 0.0f), 0.02, 0.004) << name;  // 256-512 values a row
        std::vector<float> diff(x.size());
        for (size_t i = 0; i < x.size(); ++i) diff[i] = y[i] - x[i];
        EXPECT_LT(rms(diff, 0.0f), norm ? 1e-7 : max_rel * 0.02) << name << " row " << r;
      }
    }
    std::remove(w.path.c_str());
  }
  std::remove(ref.path.c_str());
}

TEST(SyntheticModel, SameSeedSameBytesForAnyThreadCountOtherSeedOtherWeights) {
  const SyntheticModelSpec spec = tally_test::tiny_spec(2, 300);
  const Written one = write(spec, "q4_k_m", 5, 1, 300, "t1");
  const Written two = write(spec, "q4_k_m", 5, 2, 300, "t2");
  const Written other = write(spec, "q4_k_m", 6, 2, 300, "t3");
  EXPECT_EQ(read_all(one.path), read_all(two.path));
  const io::GgufFile a = open(one.path);
  const io::GgufFile b = open(other.path);
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const auto x = a.tensors()[i].bytes();
    const auto y = b.tensors()[i].bytes();
    EXPECT_FALSE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << a.tensors()[i].name;
  }
  for (const auto& w : {one, two, other}) std::remove(w.path.c_str());
}

TEST(SyntheticModel, Q4KmMixAsDocumented) {
  // Two layers: use_more_bits gives layer 1 (i >= 7 * 2 / 8), not layer 0.
  const Written w = write(tally_test::tiny_spec(2, 300), "q4_k_m", 1, 2, 300, "mix");
  const io::GgufFile f = open(w.path);
  EXPECT_EQ(f.find_tensor("token_embd.weight")->type, DType::kQ4_K);
  EXPECT_EQ(f.find_tensor("output.weight")->type, DType::kQ6_K);
  EXPECT_EQ(f.find_tensor("blk.0.attn_v.weight")->type, DType::kQ4_K);
  EXPECT_EQ(f.find_tensor("blk.0.ffn_down.weight")->type, DType::kQ4_K);
  EXPECT_EQ(f.find_tensor("blk.1.attn_v.weight")->type, DType::kQ6_K);
  EXPECT_EQ(f.find_tensor("blk.1.ffn_down.weight")->type, DType::kQ6_K);
  EXPECT_EQ(f.find_tensor("blk.1.attn_q.weight")->type, DType::kQ4_K);
  EXPECT_EQ(f.find_tensor("blk.1.attn_norm.weight")->type, DType::kF32);
  std::remove(w.path.c_str());
}

TEST(SyntheticModel, Qwen2HasBiasesTiedOutputAndNoVocabSizeKey) {
  const Written w = write(tally_test::tiny_spec(1, 300, /*qwen2=*/true), "q4_k_m", 1, 2, 300, "qwen");
  const io::GgufFile f = open(w.path);
  EXPECT_EQ(*f.get_string("general.architecture"), "qwen2");
  EXPECT_EQ(*f.get_int("qwen2.block_count"), 1);
  EXPECT_FLOAT_EQ(static_cast<float>(*f.get_float("qwen2.rope.freq_base")), 1e6f);
  EXPECT_EQ(f.find("qwen2.vocab_size"), nullptr);
  EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
  EXPECT_EQ(f.find_tensor("token_embd.weight")->type, DType::kQ6_K);  // tied: the output's type
  for (const char* b : {"attn_q", "attn_k", "attn_v"}) {
    const auto* t = f.find_tensor(fmt::format("blk.0.{}.bias", b));
    ASSERT_NE(t, nullptr) << b;
    EXPECT_EQ(t->type, DType::kF32);
    EXPECT_EQ(t->dims.size(), 1u);
  }
  EXPECT_EQ(f.find_tensor("blk.0.attn_k.bias")->dims[0], 128);
  std::remove(w.path.c_str());
}

TEST(SyntheticModel, Llama3RopeScalingWritesRopeFreqsFirst) {
  SyntheticModelSpec spec = tally_test::tiny_spec(1, 300);
  spec.llama3_rope = Llama3RopeScaling{32.0f, 1.0f, 4.0f, 8192};
  spec.rope_freq_base = 500000.0f;
  spec.head_dim_keys = true;
  const Written w = write(spec, "f16", 1, 1, 300, "rope");
  const io::GgufFile f = open(w.path);
  ASSERT_FALSE(f.tensors().empty());
  const auto& rope = f.tensors().front();
  EXPECT_EQ(rope.name, "rope_freqs.weight");
  EXPECT_EQ(rope.type, DType::kF32);
  ASSERT_EQ(rope.dims, (std::vector<int64_t>{32}));
  const auto want = llama3_rope_factors(64, 500000.0f, *spec.llama3_rope);
  std::vector<float> got(32);
  std::memcpy(got.data(), rope.data, 32 * sizeof(float));
  EXPECT_EQ(got, want);
  EXPECT_EQ(*f.get_int("llama.attention.key_length"), 64);
  EXPECT_EQ(*f.get_int("llama.attention.value_length"), 64);
  EXPECT_EQ(f.find("llama.rope.scaling.type"), nullptr);  // the converter writes only the tensor
  std::remove(w.path.c_str());
}

// phi3: the fused attn_qkv and gate+up ffn_up of the plan's shapes, and Phi3MiniModel's keys.
TEST(SyntheticModel, Phi3WritesFusedProjectionsAndItsKeys) {
  SyntheticModelSpec spec = tally_test::tiny_spec(1, 300);
  spec.shape.name = "tiny-phi3";
  spec.shape.architecture = "phi3";
  spec.shape.fused_projections = true;
  auto shape = plan::plan_model_finish(spec.shape);
  ASSERT_TRUE(shape.ok()) << shape.status().to_string();
  spec.shape = *shape;
  const Written w = write(spec, "q8_0", 1, 1, 300, "phi3");
  const io::GgufFile f = open(w.path);
  EXPECT_EQ(*f.get_string("general.architecture"), "phi3");
  EXPECT_EQ(*f.get_int("phi3.rope.scaling.original_context_length"), 512);
  EXPECT_EQ(*f.get_int("phi3.rope.dimension_count"), 64);
  const io::GgufTensorInfo* qkv = f.find_tensor("blk.0.attn_qkv.weight");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->dims, (std::vector<int64_t>{256, 256 + 2 * 128}));
  const io::GgufTensorInfo* up = f.find_tensor("blk.0.ffn_up.weight");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->dims, (std::vector<int64_t>{256, 2 * 512}));
  EXPECT_EQ(f.find_tensor("blk.0.ffn_gate.weight"), nullptr);
  EXPECT_EQ(f.find_tensor("blk.0.attn_q.weight"), nullptr);
  std::remove(w.path.c_str());
}

TEST(SyntheticModel, BadOptionsFailWithoutLeavingAFile) {
  SyntheticOptions o;
  o.spec = tally_test::tiny_spec(1, 300);
  o.vocab_gguf = tally_test::write_tiny_vocab(tally_test::temp_dir(), 301);
  o.output_path = tally_test::temp_dir() + "/bad.gguf";
  auto too_many = write_synthetic_model(o);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("301 tokens"), std::string::npos);
  o.vocab_gguf = tally_test::temp_dir() + "/no_such_vocab.gguf";
  EXPECT_FALSE(write_synthetic_model(o).ok());
  o.vocab_gguf = tally_test::write_tiny_vocab(tally_test::temp_dir(), 300);
  o.type = "iq2_xs";
  EXPECT_EQ(write_synthetic_model(o).status().code(), ErrorCode::kInvalidArgument);
  o.type = "f16";
  o.spec.reset();
  o.preset = "gpt-5";
  EXPECT_EQ(write_synthetic_model(o).status().code(), ErrorCode::kNotFound);
  o.preset = "tinyllama-1.1b";
  o.weight_std = 0.0f;
  EXPECT_EQ(write_synthetic_model(o).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(tally_test::file_exists(o.output_path));
}

}  // namespace
}  // namespace tally::synth
