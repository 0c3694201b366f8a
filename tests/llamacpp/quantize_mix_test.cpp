// `tally quantize` against llama_model_quantize (llama-quantize's library call, from llama.cpp's
// prebuilt libllama: llamacpp_lib.h) on the same f32 / f16 GGUF files:
//   TypesMatch         every tensor gets the same type under every file type (the mixes, the
//                      output / embedding rules, the block fallbacks) on a 16-layer llama with
//                      GQA 4, a qwen2 with tied embeddings, biases and rows that are not whole
//                      256-blocks, a llama with 8 experts per layer, and stories260K
//   ImatrixMixMatches  the same with an importance matrix, which changes llama.cpp's mix
//                      (q4_1 / q5_1 early ffn_down in Q4_0 / Q5_0 files, IQ4_XS / IQ4_NL
//                      without the q5_K ffn_down)
//   SameBytes          tensors stored in f32 / f16 / bf16 / q8_0 / q4_0 / q4_1 / q5_0 / q5_1
//                      without an imatrix are byte-identical in both files
//   LlamaCppFilesRun   llama.cpp's files load in tally and compute finite logits, equal to those
//                      of tally's file where every tensor's bytes are the same, and close to the
//                      f32 model's otherwise
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/thread_pool.h"
#include "io/gguf.h"
#include "io/imatrix_file.h"
#include "llamacpp_lib.h"
#include "model/model.h"
#include "plan/gguf_source.h"
#include "plan/llama_quant_rules.h"
#include "quant/model_quantizer.h"
#include "support/test_data.h"
#include "synth/synthetic_model.h"
#include "unit/synth/synthetic_test_util.h"

namespace tally_test {
namespace {

using tally::DType;

constexpr const char* kAllFileTypes[] = {"F32",    "F16",    "BF16",   "Q8_0",   "Q4_0",   "Q4_1",   "Q5_0",
                                         "Q5_1",   "Q2_K",   "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M",
                                         "Q5_K_S", "Q5_K_M", "Q6_K",   "IQ4_NL", "IQ4_XS"};

tally::synth::SyntheticModelSpec spec_of(tally::plan::PlanModel m, float rope_base) {
  m.source = "test";
  m.context_length = 256;
  auto finished = tally::plan::plan_model_finish(m);
  EXPECT_TRUE(finished.ok()) << finished.status().to_string();
  tally::synth::SyntheticModelSpec spec;
  spec.shape = std::move(finished).value();
  spec.rope_freq_base = rope_base;
  spec.rms_norm_eps = 1e-5f;
  return spec;
}

// 16 layers (so L/8 and L/16 pick layers), 8 heads over 2 KV heads (GQA 4: the attn_v rules),
// every row a multiple of 256.
tally::synth::SyntheticModelSpec llama16() {
  tally::plan::PlanModel m;
  m.name = "ref-llama16";
  m.architecture = "llama";
  m.n_layers = 16;
  m.n_embd = 256;
  m.n_heads = 8;
  m.n_kv_heads = 2;
  m.head_dim = 32;
  m.n_ff = 256;
  m.n_vocab = 256;
  return spec_of(m, 10000.0f);
}

// Qwen2.5-0.5B's oddities at a small size: rows of 320 and 352 (not whole 256-blocks: the
// fallbacks), one KV head of 5 (GQA 5), tied embeddings, q/k/v biases.
tally::synth::SyntheticModelSpec qwen2_odd() {
  tally::plan::PlanModel m;
  m.name = "ref-qwen2";
  m.architecture = "qwen2";
  m.n_layers = 8;
  m.n_embd = 320;
  m.n_heads = 5;
  m.n_kv_heads = 1;
  m.head_dim = 64;
  m.n_ff = 352;
  m.n_vocab = 256;
  m.tied_embeddings = true;
  m.qkv_bias = true;
  return spec_of(m, 1e6f);
}

// A Mixtral-like llama: 8 experts per layer (llama.cpp's 8-expert rules for attn_v / attn_k /
// attn_output).
tally::synth::SyntheticModelSpec llama_moe8() {
  tally::plan::PlanModel m;
  m.name = "ref-moe8";
  m.architecture = "llama";
  m.n_layers = 2;
  m.n_embd = 256;
  m.n_heads = 4;
  m.n_kv_heads = 2;
  m.head_dim = 64;
  m.n_ff = 64;
  m.n_vocab = 256;
  m.n_expert = 8;
  m.n_expert_used = 2;
  m.n_ff_exp = 64;  // expert ffn_down rows of 64: the fallbacks on 3-D tensors too
  return spec_of(m, 10000.0f);
}

std::string write_model(const tally::synth::SyntheticModelSpec& spec, const std::string& type) {
  tally::synth::SyntheticOptions o;
  o.spec = spec;
  o.type = type;
  o.seed = 11;
  o.n_threads = 2;
  o.vocab_gguf = write_tiny_vocab(temp_dir(), spec.shape.n_vocab);
  o.output_path = fmt::format("{}/{}_{}.gguf", temp_dir(), spec.shape.name, type);
  auto s = tally::synth::write_synthetic_model(o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return o.output_path;
}

// Random column means for every matrix the forward pass multiplies, as an imatrix would hold
// (log-normal, so a few columns dominate); experts get one row of means each.
std::vector<LlamaCppImatrixEntry> make_imatrix(const std::string& model_path) {
  auto file = tally::io::GgufFile::open(model_path);
  EXPECT_TRUE(file.ok());
  std::vector<LlamaCppImatrixEntry> entries;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const auto& t : file->tensors()) {
    const std::string name(t.name);
    if (t.dims.size() < 2 || name.rfind("blk.", 0) != 0 || name.find("_norm") != std::string::npos ||
        name.find("ffn_gate_inp") != std::string::npos || name.find(".bias") != std::string::npos)
      continue;
    const int64_t n_mat = t.dims.size() > 2 ? t.dims[2] : 1;
    LlamaCppImatrixEntry e{name, std::vector<float>(static_cast<size_t>(t.dims[0] * n_mat))};
    for (float& v : e.means) v = std::exp(normal(rng));
    entries.push_back(std::move(e));
  }
  return entries;
}

// The same means as a tally imatrix file (sums = means, counts = 1), shaped by the model's tensors.
std::string write_tally_imatrix(const std::string& model_path, const std::vector<LlamaCppImatrixEntry>& entries,
                                const std::string& path) {
  auto file = tally::io::GgufFile::open(model_path);
  EXPECT_TRUE(file.ok());
  tally::io::Imatrix m;
  m.chunk_count = 1;
  m.chunk_size = 512;
  m.datasets = {"random"};
  for (const LlamaCppImatrixEntry& e : entries) {
    const auto* t = file->find_tensor(e.name);
    tally::io::ImatrixEntry& x = m.entries[e.name];
    x.n_cols = t->dims[0];
    x.n_mat = t->dims.size() > 2 ? t->dims[2] : 1;
    x.sums = e.means;
    x.counts.assign(static_cast<size_t>(x.n_mat), 1.0f);
  }
  EXPECT_TRUE(tally::io::imatrix_write(m, path).ok());
  return path;
}

std::map<std::string, DType> tensor_types(const std::string& path) {
  std::map<std::string, DType> types;
  auto file = tally::io::GgufFile::open(path);
  EXPECT_TRUE(file.ok()) << path << ": " << file.status().to_string();
  if (file.ok())
    for (const auto& t : file->tensors()) types[std::string(t.name)] = static_cast<DType>(t.raw_type);
  return types;
}

struct Pair {
  std::string tally_path, llama_path;
};

// Both quantizers on `input` under `ftype_name`; an empty pair after a failure.
Pair quantize_both(LlamaCppLib* lib, const std::string& input, const std::string& ftype_name,
                   const std::vector<LlamaCppImatrixEntry>* imatrix, const std::string& imatrix_path) {
  const auto ft = tally::plan::llama_file_type_from_name(ftype_name);
  EXPECT_TRUE(ft.has_value());
  const std::string tag = fmt::format("{}_{}{}", input.substr(input.rfind('/') + 1), ftype_name, imatrix ? "_im" : "");
  Pair p{fmt::format("{}/tally_{}", temp_dir(), tag), fmt::format("{}/llama_{}", temp_dir(), tag)};
  tally::quant::QuantizeOptions o;
  o.input_path = input;
  o.output_path = p.tally_path;
  o.type = ftype_name;
  o.n_threads = 2;
  o.overwrite = true;
  if (imatrix) o.imatrix_path = imatrix_path;
  const auto summary = tally::quant::quantize_model(o);
  EXPECT_TRUE(summary.ok()) << ftype_name << ": tally: " << summary.status().to_string();
  LlamaCppQuantizeRequest r;
  r.input_path = input;
  r.output_path = p.llama_path;
  r.ftype = ft->ftype;
  r.n_threads = 2;
  if (imatrix) r.imatrix = *imatrix;
  const tally::Status st = lib->model_quantize(r);
  EXPECT_TRUE(st.ok()) << ftype_name << ": " << st.to_string();
  if (!summary.ok() || !st.ok()) return {};
  return p;
}

// "name: tally q4_K, llama.cpp q5_0" for every tensor whose type differs (or that one lacks).
std::vector<std::string> type_differences(const Pair& p) {
  const auto mine = tensor_types(p.tally_path);
  const auto theirs = tensor_types(p.llama_path);
  std::vector<std::string> out;
  for (const auto& [name, type] : theirs) {
    const auto it = mine.find(name);
    if (it == mine.end()) out.push_back(fmt::format("{}: only in llama.cpp's file", name));
    else if (it->second != type)
      out.push_back(fmt::format("{}: tally {}, llama.cpp {}", name, tally::dtype_name(it->second),
                                tally::dtype_name(type)));
  }
  for (const auto& [name, type] : mine)
    if (!theirs.count(name)) out.push_back(fmt::format("{}: only in tally's file", name));
  return out;
}

void expect_types_match(LlamaCppLib* lib, const std::string& input, const std::vector<std::string>& ftypes,
                        bool with_imatrix) {
  std::vector<LlamaCppImatrixEntry> imatrix;
  std::string imatrix_path;
  if (with_imatrix) {
    imatrix = make_imatrix(input);
    imatrix_path = write_tally_imatrix(input, imatrix, temp_dir() + "/imatrix_" + input.substr(input.rfind('/') + 1));
  }
  for (const std::string& ft : ftypes) {
    const Pair p = quantize_both(lib, input, ft, with_imatrix ? &imatrix : nullptr, imatrix_path);
    if (p.tally_path.empty()) continue;
    const std::vector<std::string> diff = type_differences(p);
    std::string list;
    for (const std::string& d : diff) list += "\n  " + d;
    EXPECT_TRUE(diff.empty()) << input << " " << ft << (with_imatrix ? " with imatrix" : "") << ": " << diff.size()
                              << " tensors differ:" << list;
    std::remove(p.tally_path.c_str());
    std::remove(p.llama_path.c_str());
  }
}

std::vector<std::string> all_file_types() { return {std::begin(kAllFileTypes), std::end(kAllFileTypes)}; }

TEST(LlamaCppQuantizeMix, TypesMatchOnALlamaWithGqa4) {
  TALLY_REQUIRE_LLAMACPP(lib);
  expect_types_match(lib, write_model(llama16(), "f16"), all_file_types(), false);
}

TEST(LlamaCppQuantizeMix, TypesMatchOnAQwen2WithOddRows) {
  TALLY_REQUIRE_LLAMACPP(lib);
  expect_types_match(lib, write_model(qwen2_odd(), "f32"), all_file_types(), false);
}

TEST(LlamaCppQuantizeMix, TypesMatchOnEightExperts) {
  TALLY_REQUIRE_LLAMACPP(lib);
  expect_types_match(lib, write_model(llama_moe8(), "f16"), all_file_types(), false);
}

TEST(LlamaCppQuantizeMix, TypesMatchOnStories260K) {
  TALLY_REQUIRE_LLAMACPP(lib);
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", path);
  expect_types_match(lib, path, all_file_types(), false);
}

TEST(LlamaCppQuantizeMix, ImatrixMixMatches) {
  TALLY_REQUIRE_LLAMACPP(lib);
  const std::vector<std::string> types = {"Q4_0", "Q5_0", "Q4_K_M", "IQ4_NL", "IQ4_XS"};
  expect_types_match(lib, write_model(llama16(), "f16"), types, true);
  expect_types_match(lib, write_model(qwen2_odd(), "f16"), types, true);
}

// Tensors of the types whose rounding is fully specified carry the same bytes in both files.
TEST(LlamaCppQuantizeMix, SameBytes) {
  TALLY_REQUIRE_LLAMACPP(lib);
  for (const std::string& model : {write_model(llama16(), "f32"), write_model(qwen2_odd(), "f16")}) {
    for (const char* ft : {"F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"}) {
      const Pair p = quantize_both(lib, model, ft, nullptr, "");
      if (p.tally_path.empty()) continue;
      auto a = tally::io::GgufFile::open(p.tally_path);
      auto b = tally::io::GgufFile::open(p.llama_path);
      ASSERT_TRUE(a.ok() && b.ok());
      int n_compared = 0;
      for (const auto& t : b->tensors()) {
        const DType type = t.type;
        const bool exact = type == DType::kF32 || type == DType::kF16 || type == DType::kBF16 ||
                           type == DType::kQ8_0 || type == DType::kQ4_0 || type == DType::kQ4_1 ||
                           type == DType::kQ5_0 || type == DType::kQ5_1;
        const auto* mine = a->find_tensor(t.name);
        if (!exact || !mine || mine->type != type) continue;
        ++n_compared;
        EXPECT_TRUE(mine->n_bytes == t.n_bytes && std::equal(t.bytes().begin(), t.bytes().end(), mine->bytes().begin()))
            << model << " " << ft << ": tensor " << t.name << " (" << tally::dtype_name(type) << ") differs";
      }
      EXPECT_GT(n_compared, 10) << model << " " << ft;
    }
  }
}

// The logits of the last of `tokens`.
std::vector<float> last_logits(const std::string& path, const std::vector<int32_t>& tokens) {
  auto loaded = tally::Model::load(path);
  EXPECT_TRUE(loaded.ok()) << path << ": " << loaded.status().to_string();
  if (!loaded.ok()) return {};
  const tally::Model& model = **loaded;
  auto kv = tally::KvStorage::create(tally::KvStorageShape::for_model(model.config(), 4, 16));
  EXPECT_TRUE(kv.ok()) << kv.status().to_string();
  tally::ForwardScratch scratch(model.config(), 16);
  tally::ThreadPool pool(2);
  const std::vector<int32_t> table = {0, 1, 2, 3};
  const std::vector<tally::BatchSequence> seqs = {{table}};
  std::vector<int32_t> positions, seq_index;
  for (size_t i = 0; i < tokens.size(); ++i) {
    positions.push_back(static_cast<int32_t>(i));
    seq_index.push_back(0);
  }
  const std::vector<int32_t> logit_rows = {static_cast<int32_t>(tokens.size()) - 1};
  const tally::Batch batch{tokens, positions, seq_index, seqs, logit_rows};
  std::vector<float> logits(static_cast<size_t>(model.config().n_vocab));
  const tally::Status st = model.forward(batch, *kv, scratch, pool, logits.data());
  EXPECT_TRUE(st.ok()) << st.to_string();
  return logits;
}

double rms_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0, n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    n += double(b[i]) * b[i];
  }
  return std::sqrt(s / std::max(n, 1e-30));
}

TEST(LlamaCppQuantizeMix, LlamaCppFilesRunInTally) {
  TALLY_REQUIRE_LLAMACPP(lib);
  const std::vector<int32_t> tokens = {1, 17, 250, 42, 9, 33};
  const std::vector<std::pair<std::string, std::vector<const char*>>> cases = {
      {write_model(llama16(), "f32"), {"Q8_0", "Q4_0", "Q2_K", "Q3_K_M", "Q4_K_M", "Q6_K", "IQ4_XS"}},
      {write_model(qwen2_odd(), "f32"), {"Q5_1", "Q3_K_M", "IQ4_NL"}}};
  for (const auto& [model, file_types] : cases) {
    const std::vector<float> base = last_logits(model, tokens);
    for (const char* ft : file_types) {
      const Pair p = quantize_both(lib, model, ft, nullptr, "");
      if (p.tally_path.empty()) continue;
      const std::vector<float> theirs = last_logits(p.llama_path, tokens);
      const std::vector<float> mine = last_logits(p.tally_path, tokens);
      ASSERT_EQ(theirs.size(), base.size()) << ft;
      EXPECT_TRUE(std::all_of(theirs.begin(), theirs.end(), [](float v) { return std::isfinite(v); })) << ft;
      // Same bytes in every tensor (the 32-block types, no k-quant in the file) -> same logits.
      auto a = tally::io::GgufFile::open(p.tally_path);
      auto b = tally::io::GgufFile::open(p.llama_path);
      bool same_bytes = a.ok() && b.ok();
      for (const auto& t : b->tensors()) {
        const auto* m = a->find_tensor(t.name);
        same_bytes = same_bytes && m && m->n_bytes == t.n_bytes &&
                     std::equal(t.bytes().begin(), t.bytes().end(), m->bytes().begin());
      }
      if (same_bytes) {
        EXPECT_EQ(theirs, mine) << model << " " << ft;
      }
      // Both quantized models stay near the f32 one, and about as near as each other.
      const double e_theirs = rms_difference(theirs, base), e_mine = rms_difference(mine, base);
      std::printf("%s %s: relative RMS logit error vs f32: llama.cpp's file %.5f, tally's %.5f%s\n",
                  model.substr(model.rfind('/') + 1).c_str(), ft, e_theirs, e_mine, same_bytes ? " (same bytes)" : "");
      EXPECT_LT(e_theirs, 0.5) << model << " " << ft;
      std::remove(p.tally_path.c_str());
      std::remove(p.llama_path.c_str());
    }
  }
}

}  // namespace
}  // namespace tally_test
