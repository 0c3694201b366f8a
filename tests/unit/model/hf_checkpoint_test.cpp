// Hugging Face model directories: `-m DIR` (Model::load of a directory) gives the same logits,
// bit for bit, as the GGUF the directory was written from (hf_dir_writer.h inverts the
// converter's layout), sharded or not; `convert --hf` (hf_dir_to_gguf) reproduces that GGUF's
// tensors and the metadata that matters; and each malformed directory is one clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "arch_check.h"
#include "hf_dir_writer.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "model/generation_config.h"
#include "model/hf_checkpoint.h"
#include "model/model.h"
#include "model_runner.h"
#include "tiny_model.h"
#include "tokenizer/tokenizer.h"

namespace tally_test {
namespace {

using nlohmann::json;

const std::vector<int32_t> kTokens = {3, 17, 39, 0, 22, 22, 8, 31, 5, 12, 19, 2, 36, 27, 11, 4, 9, 33, 1, 25};

struct HfCase {
  std::string label;
  TinySpec spec;
  json extra_config = json::object();
};

TinySpec base_spec(const std::string& arch) {
  TinySpec s;
  s.arch = arch;
  s.n_vocab = 128;  // room for the 102-token tokenizer (the rest become [PADn])
  s.seed = 23;
  return s;
}

std::vector<HfCase> cases() {
  std::vector<HfCase> out;
  out.push_back({"llama", base_spec("llama")});
  HfCase tied{"llama_tied_bias", base_spec("llama")};
  tied.spec.tied = true;
  tied.spec.biases = true;
  out.push_back(tied);
  HfCase qwen2{"qwen2", base_spec("qwen2")};
  qwen2.spec.biases = true;
  qwen2.spec.freq_base = 1000000.0f;
  out.push_back(qwen2);
  HfCase qwen3{"qwen3", base_spec("qwen3")};
  qwen3.spec.qk_norm = true;
  qwen3.spec.n_embd = 48;
  qwen3.spec.head_dim = 16;
  qwen3.spec.eps = 1e-6f;
  out.push_back(qwen3);
  HfCase gemma2{"gemma2", base_spec("gemma2")};
  gemma2.spec.tied = true;
  gemma2.spec.post_norms = true;
  gemma2.spec.head_dim = 16;
  gemma2.spec.extra = [](tally::io::GgufWriter& w) {
    w.set_u32("gemma2.attention.sliding_window", 5);
    w.set_f32("gemma2.attn_logit_softcapping", 2.0f);
    w.set_f32("gemma2.final_logit_softcapping", 3.0f);
  };
  gemma2.extra_config = {{"sliding_window", 5}, {"attn_logit_softcapping", 2.0},
                         {"final_logit_softcapping", 3.0}, {"query_pre_attn_scalar", 16}};
  out.push_back(gemma2);
  HfCase gemma3{"gemma3", base_spec("gemma3")};
  gemma3.spec.tied = true;
  gemma3.spec.post_norms = true;
  gemma3.spec.qk_norm = true;
  gemma3.spec.head_dim = 16;
  gemma3.spec.n_layers = 6;
  gemma3.spec.freq_base = 1000000.0f;
  gemma3.spec.extra = [](tally::io::GgufWriter& w) {
    w.set_u32("gemma3.attention.sliding_window", 5);
    w.set_string("gemma3.rope.scaling.type", "linear");
    w.set_f32("gemma3.rope.scaling.factor", 8.0f);
  };
  gemma3.extra_config = {{"sliding_window", 5}, {"rope_scaling", {{"rope_type", "linear"}, {"factor", 8.0}}},
                         {"query_pre_attn_scalar", 16}, {"rope_local_base_freq", 10000.0}};
  out.push_back(gemma3);
  HfCase moe{"qwen3moe", base_spec("qwen3moe")};
  moe.spec.qk_norm = true;
  moe.spec.n_expert = 4;
  moe.spec.n_expert_used = 2;
  moe.spec.n_ff_exp = 16;
  out.push_back(moe);
  HfCase qwen2moe{"qwen2moe", base_spec("qwen2moe")};
  qwen2moe.spec.biases = true;
  qwen2moe.spec.n_expert = 4;
  qwen2moe.spec.n_expert_used = 2;
  qwen2moe.spec.n_ff_exp = 16;
  qwen2moe.spec.n_ff_shexp = 24;
  out.push_back(qwen2moe);
  HfCase mixtral{"mixtral", base_spec("llama")};
  mixtral.spec.n_expert = 4;
  mixtral.spec.n_expert_used = 2;
  out.push_back(mixtral);
  HfCase phi3{"phi3", base_spec("phi3")};
  phi3.spec.fused = true;
  out.push_back(phi3);
  return out;
}

template <typename T>
T or_default(const tally::Result<T>& r, T fallback) {
  return r.ok() ? *r : fallback;
}

std::string temp_dir(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("tally_hf_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::vector<float> prefill_logits(const tally::Model& model) {
  ModelRunner runner(model, 16, 1, 1, 64, 0);
  return runner.step({{0, 0, kTokens}});
}

class HfCheckpoint : public ::testing::TestWithParam<HfCase> {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_P(HfCheckpoint, DirectoryGivesTheSameLogitsBitsAsTheGguf) {
  const HfCase& c = GetParam();
  const std::vector<uint8_t> bytes = make_tiny_gguf(c.spec);
  auto gguf = tally::io::GgufFile::parse(bytes);
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  auto original = tally::Model::from_gguf(std::move(gguf).value());
  ASSERT_TRUE(original.ok()) << original.status().to_string();
  const std::vector<float> want = prefill_logits(**original);

  for (int shards : {1, 3}) {
    SCOPED_TRACE(shards);
    dir_ = temp_dir(c.label);
    HfDirOptions o;
    o.shards = shards;
    o.extra_config = c.extra_config;
    write_hf_dir(c.spec, (*original)->gguf(), dir_, o);
    auto loaded = tally::Model::load(dir_);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    const tally::ModelConfig& a = (*original)->config();
    const tally::ModelConfig& b = (*loaded)->config();
    EXPECT_EQ(a.arch, b.arch);
    EXPECT_EQ(a.n_vocab, b.n_vocab);
    EXPECT_EQ(a.head_dim, b.head_dim);
    EXPECT_EQ(a.tied_output, b.tied_output);
    EXPECT_EQ(a.n_expert, b.n_expert);
    EXPECT_EQ(a.sliding_window, b.sliding_window);
    EXPECT_EQ(a.final_softcap, b.final_softcap);
    const std::vector<float> got = prefill_logits(**loaded);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
  }
}

TEST_P(HfCheckpoint, ConvertReproducesTheGgufTensorsAndMetadata) {
  const HfCase& c = GetParam();
  const std::vector<uint8_t> bytes = make_tiny_gguf(c.spec);
  auto original = tally::io::GgufFile::parse(bytes);
  ASSERT_TRUE(original.ok());
  dir_ = temp_dir(c.label + "_convert");
  HfDirOptions o;
  o.extra_config = c.extra_config;
  write_hf_dir(c.spec, *original, dir_, o);
  tally::io::GgufWriter w;
  int produced = 0;
  auto summary = tally::hf_dir_to_gguf(dir_, std::nullopt, w, [&] { ++produced; });
  ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  const std::vector<uint8_t> out_bytes = w.to_bytes();
  auto out = tally::io::GgufFile::parse(out_bytes);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(produced, static_cast<int>(original->tensors().size()));
  ASSERT_EQ(out->tensors().size(), original->tensors().size());
  for (const auto& t : original->tensors()) {
    SCOPED_TRACE(std::string(t.name));
    const tally::io::GgufTensorInfo* u = out->find_tensor(t.name);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->dims, t.dims);
    EXPECT_EQ(u->type, t.type);
    ASSERT_EQ(u->n_bytes, t.n_bytes);
    EXPECT_EQ(std::memcmp(u->data, t.data, t.n_bytes), 0);
  }
  // Every key of the original (the model's shape) has the same value.
  for (const auto& [key, value] : original->metadata()) {
    SCOPED_TRACE(std::string(key));
    const tally::io::GgufValue* v = out->find(key);
    ASSERT_NE(v, nullptr);
    if (value.as_string()) {
      EXPECT_EQ(v->as_string(), value.as_string());
    } else {
      EXPECT_EQ(v->as_float(), value.as_float());
    }
  }
  EXPECT_EQ(or_default<std::string_view>(out->get_string("tokenizer.ggml.model"), ""), "gpt2");
  EXPECT_EQ(or_default<std::string_view>(out->get_string("tokenizer.ggml.pre"), ""), "llama-bpe");
  EXPECT_EQ(out->get_string_array("tokenizer.ggml.tokens")->size(), 128u);
  EXPECT_EQ(or_default<int64_t>(out->get_int("tokenizer.ggml.eos_token_id"), -1), 98);
  EXPECT_EQ(or_default<int64_t>(out->get_int("tokenizer.ggml.bos_token_id"), -1), 99);
  EXPECT_TRUE(out->get_string("tokenizer.chat_template").ok());
}

// The file mapped at `p` in this process ("" when none): /proc/self/maps.
std::string mapped_file_at(const void* p) {
  std::ifstream maps("/proc/self/maps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  for (std::string line; std::getline(maps, line);) {
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) != 2 || addr < begin || addr >= end) continue;
    const size_t slash = line.find('/');
    return slash == std::string::npos ? std::string() : line.substr(slash);
  }
  return {};
}

// `-m DIR` binds the tensors whose bytes are already the GGUF's in the mapped safetensors files
// (experts as per-expert matrices); only transformed ones (llama's q/k rope permutation, biases included,
// Gemma's 1 + w norms) are copies, and the ledger counts them so.
TEST_P(HfCheckpoint, WeightsAreBoundInPlaceInTheMappedFiles) {
  const HfCase& c = GetParam();
  const std::vector<uint8_t> bytes = make_tiny_gguf(c.spec);
  auto gguf = tally::io::GgufFile::parse(bytes);
  ASSERT_TRUE(gguf.ok());
  dir_ = temp_dir(c.label + "_in_place");
  HfDirOptions o;
  o.shards = 2;
  o.extra_config = c.extra_config;
  write_hf_dir(c.spec, *gguf, dir_, o);
  auto loaded = tally::Model::load(dir_);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const tally::io::GgufFile& f = (*loaded)->gguf();
  const bool permuted = c.spec.arch == "llama";
  const bool gemma = c.spec.arch.starts_with("gemma");
  int64_t in_place = 0, copied = 0;
  for (const auto& t : f.tensors()) {
    SCOPED_TRACE(std::string(t.name));
    const std::string file = mapped_file_at(t.data);
    const bool mapped = file.starts_with(dir_ + "/") && file.ends_with(".safetensors");
    EXPECT_NE(mapped, f.owns_bytes_of(t));  // one or the other
    const std::string_view name = t.name;
    const bool qk = name.ends_with("attn_q.weight") || name.ends_with("attn_k.weight") ||
                    name.ends_with("attn_q.bias") || name.ends_with("attn_k.bias");
    const bool must_copy = (permuted && qk) ||
                           (gemma && name.ends_with("norm.weight"));
    EXPECT_EQ(mapped, !must_copy);
    (mapped ? in_place : copied) += static_cast<int64_t>(t.n_bytes);
  }
  EXPECT_GT(in_place, copied);
  if (c.spec.n_expert > 0) {  // experts bound one matrix each, never stacked into a copy
    EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_exps.weight"), nullptr);
    const tally::io::GgufTensorInfo* e = f.find_tensor("blk.0.ffn_down.3.weight");
    ASSERT_NE(e, nullptr);
    EXPECT_FALSE(f.owns_bytes_of(*e));
  }
  const tally::ModelWeights& w = (*loaded)->weights();
  EXPECT_GT(w.mapped_bytes, 0);
  if (!permuted && !gemma) {
    EXPECT_EQ(w.owned_bytes, 0);
  }
  if (permuted) {
    EXPECT_GT(w.owned_bytes, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, HfCheckpoint, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.label; });

// The tokenizer a directory loads with: tokenizer.json's, padded to the embedding's rows.
TEST(HfCheckpointTokenizer, MatchesTokenizerJsonAndIsPadded) {
  const TinySpec spec = base_spec("llama");
  const std::vector<uint8_t> bytes = make_tiny_gguf(spec);
  auto gguf = tally::io::GgufFile::parse(bytes);
  ASSERT_TRUE(gguf.ok());
  const std::string dir = temp_dir("tokenizer");
  write_hf_dir(spec, *gguf, dir);
  auto model = tally::Model::load(dir);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto from_model = tally::Tokenizer::from_gguf((*model)->gguf());
  auto from_dir = tally::Tokenizer::from_hf_dir(dir);
  ASSERT_TRUE(from_model.ok()) << from_model.status().to_string();
  ASSERT_TRUE(from_dir.ok()) << from_dir.status().to_string();
  EXPECT_EQ((*from_model)->n_vocab(), 128);
  EXPECT_EQ((*from_model)->token_type(120), tally::TokenType::kUnused);
  for (const char* text : {"abc ab", "hello, world!", "<|bos|>x<|eot|>"}) {
    EXPECT_EQ((*from_model)->encode(text, true, true), (*from_dir)->encode(text, true, true)) << text;
  }
  EXPECT_EQ((*from_model)->eos(), 98);
  EXPECT_EQ((*from_model)->bos(), 99);
  std::filesystem::remove_all(dir);
}

// Errors: each names what is wrong.
class HfCheckpointErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = make_tiny_gguf(spec_);
    auto g = tally::io::GgufFile::parse(bytes_);
    ASSERT_TRUE(g.ok());
    gguf_ = std::make_unique<tally::io::GgufFile>(std::move(g).value());
    dir_ = temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(HfDirOptions o = {}) { write_hf_dir(spec_, *gguf_, dir_, o); }
  void expect_error(std::string_view what, tally::ErrorCode code) {
    auto m = tally::Model::load(dir_);
    ASSERT_FALSE(m.ok());
    const tally::Status st = m.status();
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.to_string();
    EXPECT_NE(st.message().find(dir_), std::string::npos) << st.to_string();
  }
  void edit_config(const json& patch) {
    std::ifstream in(dir_ + "/config.json");
    json c = json::parse(in);
    c.merge_patch(patch);
    std::ofstream(dir_ + "/config.json") << c.dump();
  }
  TinySpec spec_ = base_spec("llama");
  std::vector<uint8_t> bytes_;
  std::unique_ptr<tally::io::GgufFile> gguf_;
  std::string dir_;
};

TEST_F(HfCheckpointErrors, UnsupportedArchitecture) {
  write();
  edit_config({{"architectures", {"MambaForCausalLM"}}});
  expect_error("architecture 'MambaForCausalLM' is not supported", tally::ErrorCode::kUnsupported);
}

TEST_F(HfCheckpointErrors, MissingTokenizer) {
  HfDirOptions o;
  o.tokenizer = false;
  write(o);
  expect_error("tokenizer.json not found", tally::ErrorCode::kNotFound);
}

// A directory with another format's tokenizer files (Phi-3's and Gemma's tokenizer.model, a
// llama2.c tokenizer .bin) says which it found and the way to a tokenizer.json.
TEST_F(HfCheckpointErrors, TokenizerOfAnotherFormat) {
  HfDirOptions o;
  o.tokenizer = false;
  write(o);
  expect_error("tally reads a Hugging Face model's tokenizer from tokenizer.json", tally::ErrorCode::kNotFound);
  EXPECT_EQ(tally::Model::load(dir_).status().message().find("the directory has"), std::string::npos);
  std::ofstream(dir_ + "/tokenizer.model") << "\x0a\x0b<unk>";  // the start of a SentencePiece protobuf
  expect_error("the directory has tokenizer.model: a SentencePiece model (protobuf), which tally does not read; "
               "transformers writes the tokenizer.json: AutoTokenizer.from_pretrained(DIR).save_pretrained(DIR)",
               tally::ErrorCode::kNotFound);
  std::filesystem::remove(dir_ + "/tokenizer.model");
  std::ofstream(dir_ + "/tok512.bin") << "llama2.c";
  expect_error("the directory has tok512.bin: a llama2.c tokenizer, read only with its checkpoint: tally convert --llama2c",
               tally::ErrorCode::kNotFound);
  std::ofstream(dir_ + "/vocab.json") << "{}";
  std::ofstream(dir_ + "/merges.txt") << "";
  expect_error("tok512.bin: a llama2.c tokenizer", tally::ErrorCode::kNotFound);
  expect_error("the directory has merges.txt + vocab.json: GPT-2-style", tally::ErrorCode::kNotFound);
  auto tok = tally::Tokenizer::from_hf_dir(dir_);  // the tokenizer-only loader says the same
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), tally::ErrorCode::kNotFound);
  EXPECT_NE(tok.status().message().find("merges.txt + vocab.json: GPT-2-style"), std::string::npos) << tok.status().to_string();
}

TEST_F(HfCheckpointErrors, MissingConfig) {
  write();
  std::filesystem::remove(dir_ + "/config.json");
  expect_error("config.json", tally::ErrorCode::kNotFound);
}

TEST_F(HfCheckpointErrors, MissingTensor) {
  spec_.skip_tensors = {"blk.1.ffn_gate.weight"};
  SetUp();
  write();
  expect_error("tensor 'model.layers.1.mlp.gate_proj.weight' not found", tally::ErrorCode::kNotFound);
}

TEST_F(HfCheckpointErrors, UnknownTensor) {
  spec_.biases = true;  // the config says attention_bias false below: the biases map to nothing
  SetUp();
  write({1, {{"attention_bias", false}}});
  expect_error("'model.layers.0.self_attn.k_proj.bias' is not part of a LlamaForCausalLM", tally::ErrorCode::kUnsupported);
}

TEST_F(HfCheckpointErrors, UnsupportedRopeScaling) {
  write({1, {{"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 4.0}}}}});
  expect_error("rope_scaling type 'dynamic' is not supported", tally::ErrorCode::kUnsupported);
  write({1, {{"rope_scaling", {{"type", "longrope"}}}}});  // longrope is phi3's only
  expect_error("rope_scaling type 'longrope'", tally::ErrorCode::kUnsupported);
}

// YaRN's fields become llama.cpp's keys; an explicit attention_factor is the final multiplier.
TEST_F(HfCheckpointErrors, YarnRopeScalingReachesTheModelConfig) {
  write({1, {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32},
                              {"beta_fast", 16.0}, {"beta_slow", 2.0}}}}});
  auto m = tally::Model::load(dir_);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const tally::RopeScaling& r = (*m)->config().rope_scaling;
  EXPECT_EQ(r.type, tally::RopeScalingType::kYarn);
  EXPECT_EQ(r.factor, 4.0f);
  EXPECT_EQ(r.original_context_length, 32);
  EXPECT_EQ(r.beta_fast, 16.0f);
  EXPECT_EQ(r.beta_slow, 2.0f);
  EXPECT_NEAR(r.attn_factor, 1.0 + 0.1 * std::log(4.0), 1e-6);
  write({1, {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32},
                              {"attention_factor", 1.5}}}}});
  m = tally::Model::load(dir_);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_NEAR((*m)->config().rope_scaling.attn_factor, 1.5, 1e-6);
}

// phi3's long_factor/short_factor lists become the LongRoPE factor tensors.
TEST_F(HfCheckpointErrors, PhiLongRopeFactorsBecomeTensors) {
  spec_ = base_spec("phi3");
  spec_.fused = true;  // phi3 checkpoints fuse qkv and gate/up
  SetUp();
  const int64_t pairs = spec_.head_dim / 2;
  std::vector<double> long_f(static_cast<size_t>(pairs)), short_f(static_cast<size_t>(pairs));
  for (int64_t i = 0; i < pairs; ++i) {
    long_f[static_cast<size_t>(i)] = 1.0 + static_cast<double>(i);
    short_f[static_cast<size_t>(i)] = 1.0 + 0.5 * static_cast<double>(i);
  }
  write({1, {{"original_max_position_embeddings", 16},
             {"rope_scaling", {{"type", "longrope"}, {"long_factor", long_f}, {"short_factor", short_f}}}}});
  auto m = tally::Model::load(dir_);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_TRUE((*m)->config().has_longrope);
  const tally::io::GgufTensorInfo* t = (*m)->gguf().find_tensor("rope_factors_long.weight");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->dims, (std::vector<int64_t>{pairs}));
  std::vector<float> f(static_cast<size_t>(pairs));
  std::memcpy(f.data(), t->data, f.size() * 4);
  for (int64_t i = 0; i < pairs; ++i) EXPECT_EQ(f[static_cast<size_t>(i)], static_cast<float>(long_f[static_cast<size_t>(i)]));
  ASSERT_NE((*m)->gguf().find_tensor("rope_factors_short.weight"), nullptr);
  long_f.pop_back();
  write({1, {{"original_max_position_embeddings", 16},
             {"rope_scaling", {{"type", "longrope"}, {"long_factor", long_f}, {"short_factor", short_f}}}}});
  expect_error("rope_scaling.long_factor must be a list of", tally::ErrorCode::kFormat);
}

// LongRoPE's attention factor is always written, as llama.cpp's converter (Phi3MiniModel)
// writes it: sqrt(1 + ln(scale) / ln(original)) for scale = max_position_embeddings / original
// above 1, else 1; a config's attention_factor wins (Hugging Face's rule; llama.cpp's converter
// ignores it).
TEST_F(HfCheckpointErrors, PhiLongRopeAttnFactorIsAlwaysWritten) {
  spec_ = base_spec("phi3");
  spec_.fused = true;
  SetUp();
  const json factors = std::vector<double>(static_cast<size_t>(spec_.head_dim / 2), 2.0);
  const json longrope = {{"type", "longrope"}, {"long_factor", factors}, {"short_factor", factors}};
  const auto attn_factor = [&](const json& patch) -> double {
    write({1, patch});
    auto m = tally::Model::load(dir_);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    if (!m.ok()) return -1.0;
    const auto v = (*m)->gguf().get_float("phi3.rope.scaling.attn_factor");
    EXPECT_TRUE(v.ok()) << v.status().to_string();
    return v.ok() ? *v : -1.0;
  };
  EXPECT_NEAR(attn_factor({{"max_position_embeddings", 256}, {"original_max_position_embeddings", 16},
                           {"rope_scaling", longrope}}),
              std::sqrt(1.0 + std::log(16.0) / std::log(16.0)), 1e-6);
  EXPECT_EQ(attn_factor({{"max_position_embeddings", 16}, {"original_max_position_embeddings", 16},
                         {"rope_scaling", longrope}}),
            1.0);
  json own = longrope;
  own["attention_factor"] = 1.3;
  EXPECT_NEAR(attn_factor({{"max_position_embeddings", 256}, {"original_max_position_embeddings", 16},
                           {"rope_scaling", own}}),
              1.3, 1e-6);
}

// Mistral's sliding_window windows every layer of a llama model; null means none.
TEST_F(HfCheckpointErrors, MistralSlidingWindowWindowsEveryLayer) {
  write({1, {{"sliding_window", 8}}});
  auto m = tally::Model::load(dir_);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->config().full_window(), 8);
  write({1, {{"sliding_window", nullptr}}});
  m = tally::Model::load(dir_);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->config().full_window(), 0);
}

TEST_F(HfCheckpointErrors, BadShapeIsNamed) {
  write({1, {{"intermediate_size", 40}}});  // the tensors are 48 wide
  expect_error("ffn_gate.weight", tally::ErrorCode::kFormat);
}

TEST_F(HfCheckpointErrors, CorruptSafetensors) {
  write();
  const char bad[] = {0x10, 0, 0, 0, 0, 0, 0, 0, '{', '}'};  // claims a 16-byte header
  std::ofstream(dir_ + "/model.safetensors", std::ios::binary | std::ios::trunc).write(bad, sizeof bad);
  expect_error("larger than the file", tally::ErrorCode::kFormat);
}

// llama3 rope scaling becomes llama.cpp's rope_freqs.weight: 1 for high frequencies, the
// factor for low ones, smoothed between.
TEST_F(HfCheckpointErrors, Llama3RopeScalingWritesRopeFreqs) {
  write({1, {{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}}}}});
  auto m = tally::Model::load(dir_);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_TRUE((*m)->config().has_rope_freqs);
  const tally::io::GgufTensorInfo* t = (*m)->gguf().find_tensor("rope_freqs.weight");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->dims, (std::vector<int64_t>{spec_.head_dim / 2}));
  std::vector<float> f(static_cast<size_t>(t->dims[0]));
  std::memcpy(f.data(), t->data, f.size() * 4);
  EXPECT_EQ(f.front(), 1.0f);
  EXPECT_EQ(f.back(), 8.0f);
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
}

TEST_F(HfCheckpointErrors, GenerationConfigGivesSamplingDefaults) {
  write();
  std::ofstream(dir_ + "/generation_config.json") << R"({"temperature": 0.6, "top_p": 0.9, "top_k": 20, "eos_token_id": [98, 97]})";
  auto f = tally::open_model_file(dir_);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_FLOAT_EQ(static_cast<float>(or_default(f->get_float("general.sampling.temp"), 0.0)), 0.6f);
  EXPECT_FLOAT_EQ(static_cast<float>(or_default(f->get_float("general.sampling.top_p"), 0.0)), 0.9f);
  EXPECT_EQ(or_default<int64_t>(f->get_int("general.sampling.top_k"), 0), 20);
  EXPECT_EQ(or_default<int64_t>(f->get_int("tokenizer.ggml.eos_token_id"), 0), 98);  // tokenizer_config's
  // The whole eos list ends generation: 97 is an ordinary token of the tokenizer otherwise.
  auto tok = tally::Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_TRUE((*tok)->is_eog(98));
  EXPECT_TRUE((*tok)->is_eog(97));
  auto d = tally::read_gguf_sampling_defaults(*f);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->temperature, 0.6f);
  EXPECT_EQ(d->top_p, 0.9f);
  EXPECT_EQ(d->top_k, 20);
  EXPECT_FALSE(d->min_p.has_value());

  std::ofstream(dir_ + "/generation_config.json", std::ios::trunc) << R"({"eos_token_id": 98})";
  f = tally::open_model_file(dir_);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  tok = tally::Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_FALSE((*tok)->is_eog(97));
  EXPECT_EQ(f->find("tokenizer.ggml.eos_token_ids"), nullptr);  // nothing beyond the tokenizer's EOS
  d = tally::read_gguf_sampling_defaults(*f);
  ASSERT_TRUE(d.ok() && d->empty());

  std::ofstream(dir_ + "/generation_config.json", std::ios::trunc) << R"({"top_p": "high"})";
  expect_error("generation_config.json: top_p is not a number", tally::ErrorCode::kFormat);
  std::ofstream(dir_ + "/generation_config.json", std::ios::trunc) << R"({"temperature": -1})";
  expect_error("temperature", tally::ErrorCode::kFormat);
}

}  // namespace
}  // namespace tally_test
