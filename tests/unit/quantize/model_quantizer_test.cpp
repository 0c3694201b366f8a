// quantize_model (`tally quantize`) on small synthetic f32 / f16 / q8_0 models: the bytes are
// quantize_row's for every row (the streaming changes nothing), metadata is copied with
// general.file_type set, types follow the shared llama.cpp rules, the output is the same for
// any thread count, and bad input (unknown type, an existing output, a
// NaN met mid-write) fails with a clear error and no file left behind.
#include "quant/model_quantizer.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <tuple>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../synth/synthetic_test_util.h"
#include "io/gguf.h"
#include "io/imatrix_file.h"
#include "support/test_data.h"
#include "synth/synthetic_model.h"
#include "tensor/quantize.h"

namespace tally::quant {
namespace {

std::string write_model(const synth::SyntheticModelSpec& spec, const std::string& type, const std::string& tag) {
  synth::SyntheticOptions o;
  o.spec = spec;
  o.type = type;
  o.seed = 7;
  o.n_threads = 2;
  o.vocab_gguf = tally_test::write_tiny_vocab(tally_test::temp_dir(), spec.shape.n_vocab);
  o.output_path = fmt::format("{}/in_{}_{}.gguf", tally_test::temp_dir(), tag, type);
  auto s = synth::write_synthetic_model(o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return o.output_path;
}

// Rows of 96 (2 heads of 48) and 80 (ffn_down): not whole 256-blocks; 80 not whole 32-blocks.
synth::SyntheticModelSpec odd_spec() {
  plan::PlanModel m;
  m.name = "odd";
  m.source = "test";
  m.architecture = "llama";
  m.n_layers = 2;
  m.n_embd = 96;
  m.n_heads = 2;
  m.n_kv_heads = 2;
  m.head_dim = 48;
  m.n_ff = 80;
  m.n_vocab = 64;
  m.context_length = 64;
  synth::SyntheticModelSpec spec;
  spec.shape = *plan::plan_model_finish(m);
  spec.rope_freq_base = 10000.0f;
  spec.rms_norm_eps = 1e-5f;
  return spec;
}

struct QuantizeRun {
  Result<QuantizeSummary> summary;
  std::vector<std::string> notes;
};

QuantizeRun quantize(QuantizeOptions o) {
  QuantizeRun r{QuantizeSummary{}, {}};
  o.on_note = [&r](std::string_view line) { r.notes.emplace_back(line); };
  r.summary = quantize_model(o);
  return r;
}

QuantizeOptions options(const std::string& in, const std::string& type, const std::string& tag) {
  QuantizeOptions o;
  o.input_path = in;
  o.output_path = fmt::format("{}/out_{}_{}.gguf", tally_test::temp_dir(), tag, type);
  o.type = type;
  o.n_threads = 2;
  o.overwrite = true;
  return o;
}

io::GgufFile open_gguf(const std::string& path) {
  auto f = io::GgufFile::open(path);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  return std::move(f).value();
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

bool any_note_has(const QuantizeRun& r, std::string_view text) {
  for (const auto& n : r.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

// Each matrix of `out` holds tally quantize's quantizer (quantize_row_weighted without an
// importance matrix) of the source rows; everything else is copied.
void expect_rows_requantized(const io::GgufFile& in, const io::GgufFile& out) {
  ASSERT_EQ(in.tensors().size(), out.tensors().size());
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const io::GgufTensorInfo& a = in.tensors()[i];
    const io::GgufTensorInfo& b = out.tensors()[i];
    ASSERT_EQ(a.name, b.name);
    ASSERT_EQ(a.dims, b.dims);
    if (a.type == b.type) {
      EXPECT_EQ(0, std::memcmp(a.data, b.data, a.n_bytes)) << a.name;
      continue;
    }
    const int64_t n_cols = a.dims[0], n_rows = a.n_elements() / n_cols;
    std::vector<float> row(static_cast<size_t>(n_cols));
    std::vector<uint8_t> want(static_cast<size_t>(dtype_row_bytes(b.type, n_cols)));
    for (int64_t r = 0; r < n_rows; ++r) {
      dequantize_row(a.type, a.data + r * dtype_row_bytes(a.type, n_cols), row.data(), n_cols);
      quantize_row_weighted(b.type, row.data(), want.data(), n_cols, nullptr);
      ASSERT_EQ(0, std::memcmp(want.data(), b.data + r * want.size(), want.size())) << a.name << " row " << r;
    }
  }
}

TEST(ModelQuantizer, Q8_0RowsAndMetadata) {
  const std::string in_path = write_model(tally_test::tiny_spec(2, 300), "f32", "meta");
  const QuantizeRun r = quantize(options(in_path, "Q8_0", "meta"));
  ASSERT_TRUE(r.summary.ok()) << r.summary.status().to_string();
  const io::GgufFile in = open_gguf(in_path);
  const io::GgufFile out = open_gguf(options(in_path, "Q8_0", "meta").output_path);
  expect_rows_requantized(in, out);
  for (const auto& t : out.tensors()) EXPECT_EQ(t.type, t.dims.size() > 1 ? DType::kQ8_0 : DType::kF32) << t.name;
  // Every key in order, then the two the quantizer sets.
  std::vector<std::string_view> want, got;
  for (const auto& [k, v] : in.metadata())
    if (k != "general.file_type" && k != "general.quantization_version") want.push_back(k);
  want.push_back("general.quantization_version");
  want.push_back("general.file_type");
  for (const auto& [k, v] : out.metadata()) got.push_back(k);
  EXPECT_EQ(got, want);
  EXPECT_EQ(*out.get_int("general.file_type"), 7);
  EXPECT_EQ(*out.get_int("general.quantization_version"), 2);
  EXPECT_EQ(*out.get_string("general.name"), *in.get_string("general.name"));
  EXPECT_EQ(out.find("tokenizer.ggml.tokens")->array_size(), 300u);
  EXPECT_EQ(r.summary->n_quantized, r.summary->n_tensors - 2 * 2 - 1);  // all but the norms
  EXPECT_EQ(r.summary->n_fallback, 0);
}

TEST(ModelQuantizer, MixFollowsTheSharedRulesAndIsTheSameOnAnyThreadCount) {
  const auto spec = tally_test::tiny_spec(8, 300);
  const std::string in_path = write_model(spec, "f16", "mix");
  QuantizeOptions one = options(in_path, "q4_k_m", "mix1");
  one.n_threads = 1;
  QuantizeOptions three = options(in_path, "q4_k_m", "mix3");
  three.n_threads = 3;
  ASSERT_TRUE(quantize(one).summary.ok());
  ASSERT_TRUE(quantize(three).summary.ok());
  EXPECT_EQ(file_bytes(one.output_path), file_bytes(three.output_path));
  const io::GgufFile out = open_gguf(one.output_path);
  expect_rows_requantized(open_gguf(in_path), out);
  const QuantScheme scheme = *quant_scheme_from_name("q4_k_m");
  for (size_t i = 0; i < spec.shape.tensors.size(); ++i) {
    const auto& t = spec.shape.tensors[i];
    EXPECT_EQ(out.find_tensor(t.name)->type, *quant_scheme_tensor_type(scheme, t, spec.shape)) << t.name;
  }
  EXPECT_EQ(out.find_tensor("output.weight")->type, DType::kQ6_K);
  EXPECT_EQ(out.find_tensor("blk.0.attn_v.weight")->type, DType::kQ6_K);  // use_more_bits(0, 8)
  EXPECT_EQ(out.find_tensor("blk.1.attn_v.weight")->type, DType::kQ4_K);
  EXPECT_EQ(out.find_tensor("blk.7.ffn_down.weight")->type, DType::kQ6_K);
  EXPECT_EQ(*out.get_int("general.file_type"), 15);
}

TEST(ModelQuantizer, PureAndTheTypeOverrides) {
  const std::string in_path = write_model(tally_test::tiny_spec(2, 300), "f32", "pure");
  QuantizeOptions o = options(in_path, "Q4_K_M", "pure");
  o.pure = true;
  o.token_embd_type = DType::kF16;
  ASSERT_TRUE(quantize(o).summary.ok());
  const io::GgufFile pure = open_gguf(o.output_path);
  EXPECT_EQ(pure.find_tensor("output.weight")->type, DType::kQ4_K);
  EXPECT_EQ(pure.find_tensor("blk.0.attn_v.weight")->type, DType::kQ4_K);
  EXPECT_EQ(pure.find_tensor("token_embd.weight")->type, DType::kF16);
  o.pure = false;
  o.output_type = DType::kQ8_0;
  ASSERT_TRUE(quantize(o).summary.ok());
  EXPECT_EQ(open_gguf(o.output_path).find_tensor("output.weight")->type, DType::kQ8_0);
}

TEST(ModelQuantizer, RequantizingFromQ8_0SaysSo) {
  const std::string in_path = write_model(tally_test::tiny_spec(1, 300), "q8_0", "requant");
  const QuantizeRun r = quantize(options(in_path, "Q4_0", "requant"));
  ASSERT_TRUE(r.summary.ok()) << r.summary.status().to_string();
  EXPECT_TRUE(any_note_has(r, "requantizing from q8_0")) << (r.notes.empty() ? "" : r.notes[0]);
  expect_rows_requantized(open_gguf(in_path), open_gguf(options(in_path, "Q4_0", "requant").output_path));
}

TEST(ModelQuantizer, RowsOfPartialBlocksFallBack) {
  const std::string in_path = write_model(odd_spec(), "f32", "odd");
  // q4_K -> q5_0 for rows of 96; q6_K (ffn_down of both layers) -> q8_0 -> f16 for rows of 80.
  const QuantizeRun km = quantize(options(in_path, "Q4_K_M", "odd"));
  ASSERT_TRUE(km.summary.ok()) << km.summary.status().to_string();
  EXPECT_TRUE(any_note_has(km, "blk.0.attn_q.weight: rows of 96 are not whole q4_K blocks of 256: using q5_0"));
  EXPECT_TRUE(any_note_has(km, "blk.1.ffn_down.weight: rows of 80 are not whole q6_K blocks of 256: using f16"));
  const io::GgufFile out = open_gguf(options(in_path, "Q4_K_M", "odd").output_path);
  EXPECT_EQ(out.find_tensor("blk.1.ffn_up.weight")->type, DType::kQ5_0);
  EXPECT_EQ(out.find_tensor("blk.1.ffn_down.weight")->type, DType::kF16);
  EXPECT_EQ(out.find_tensor("blk.1.attn_v.weight")->type, DType::kQ8_0);  // q6_K -> q8_0
  EXPECT_EQ(out.find_tensor("output.weight")->type, DType::kQ8_0);       // the output rule itself
  EXPECT_EQ(km.summary->n_fallback, 2 * 7 + 1);  // every matrix of both blocks, and token_embd

  // A 32-block type has no smaller block: rows of 80 go to f16, as llama.cpp's quantizer
  // does (tests/llamacpp checks it against llama_model_quantize).
  const QuantizeRun q4 = quantize(options(in_path, "Q4_0", "odd"));
  ASSERT_TRUE(q4.summary.ok()) << q4.summary.status().to_string();
  EXPECT_TRUE(any_note_has(q4, "blk.0.ffn_down.weight: rows of 80 are not whole q4_0 blocks of 32: using f16"));
  const io::GgufFile q4_out = open_gguf(options(in_path, "Q4_0", "odd").output_path);
  EXPECT_EQ(q4_out.find_tensor("blk.0.ffn_down.weight")->type, DType::kF16);
  EXPECT_EQ(q4_out.find_tensor("blk.0.ffn_up.weight")->type, DType::kQ4_0);
}

TEST(ModelQuantizer, UnknownTypeListsTheValidOnes) {
  QuantizeOptions o = options("unused.gguf", "Q4_K_X", "unknown");
  const QuantizeRun r = quantize(o);
  ASSERT_FALSE(r.summary.ok());
  EXPECT_EQ(r.summary.status().code(), ErrorCode::kInvalidArgument);
  for (const char* name : {"'Q4_K_X'", "Q4_K_M", "Q3_K_L", "IQ4_XS", "BF16"})
    EXPECT_NE(r.summary.status().message().find(name), std::string::npos) << name;
  EXPECT_FALSE(quantize_tensor_type_from_name("q9_9").ok());
  EXPECT_EQ(*quantize_tensor_type_from_name("Q6_K"), DType::kQ6_K);
}

TEST(ModelQuantizer, AnExistingOutputNeedsOverwrite) {
  const std::string in_path = write_model(tally_test::tiny_spec(1, 300), "f32", "exists");
  QuantizeOptions o = options(in_path, "Q8_0", "exists");
  ASSERT_TRUE(quantize(o).summary.ok());
  const std::string before = file_bytes(o.output_path);
  o.overwrite = false;
  o.type = "Q4_0";
  const QuantizeRun r = quantize(o);
  ASSERT_FALSE(r.summary.ok());
  EXPECT_NE(r.summary.status().message().find("--overwrite"), std::string::npos);
  EXPECT_EQ(file_bytes(o.output_path), before);
  o.overwrite = true;
  ASSERT_TRUE(quantize(o).summary.ok());
  EXPECT_NE(file_bytes(o.output_path), before);
  o.output_path = in_path;  // never over its own input
  EXPECT_FALSE(quantize(o).summary.ok());
}

// A NaN in the last tensor stops the write after every other tensor went out: neither the
// output nor the temporary file it was written to remains.
TEST(ModelQuantizer, AFailedWriteLeavesNoFile) {
  const std::string clean = write_model(tally_test::tiny_spec(1, 300), "f32", "nan");
  std::string bytes = file_bytes(clean);
  {
    const io::GgufFile f = open_gguf(clean);
    const io::GgufTensorInfo& last = f.tensors().back();
    ASSERT_EQ(last.name, "output.weight");
    const float nan = std::nanf("");
    std::memcpy(bytes.data() + f.data_offset() + last.offset + 4 * 100, &nan, sizeof nan);
  }
  const std::string dir = tally_test::temp_dir() + "/nan_case";
  std::filesystem::create_directories(dir);
  const std::string in_path = dir + "/in.gguf";
  std::ofstream(in_path, std::ios::binary) << bytes;
  QuantizeOptions o = options(in_path, "Q8_0", "nan");
  o.output_path = dir + "/out.gguf";
  const QuantizeRun r = quantize(o);
  ASSERT_FALSE(r.summary.ok());
  EXPECT_NE(r.summary.status().message().find("output.weight"), std::string::npos) << r.summary.status().to_string();
  EXPECT_NE(r.summary.status().message().find("NaN"), std::string::npos);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.path().filename() != "in.gguf";
  EXPECT_EQ(files, 0);
}

// With --imatrix, the tensors it has an entry for are quantized with their columns' mean
// squared activations as weights (quantize_row_weighted with that importance), the others as
// without; an imatrix naming a tensor the model lacks, or of another row length, is refused.
TEST(ModelQuantizer, ImatrixWeightsItsTensorsAndAnotherModelsIsRefused) {
  const auto spec = tally_test::tiny_spec(2, 300);
  const std::string in_path = write_model(spec, "f32", "imat");
  const io::GgufFile in = open_gguf(in_path);
  const io::GgufTensorInfo& down = *in.find_tensor("blk.1.ffn_down.weight");
  const int64_t n_cols = down.dims[0];
  io::Imatrix m;
  io::ImatrixEntry e;
  e.n_cols = n_cols;
  e.counts = {4.0f};
  for (int64_t c = 0; c < n_cols; ++c) e.sums.push_back(c % 5 == 0 ? 400.0f : 1.0f + static_cast<float>(c % 3));
  m.entries["blk.1.ffn_down.weight"] = e;
  const std::string imat = tally_test::temp_dir() + "/imat.gguf";
  ASSERT_TRUE(io::imatrix_write(m, imat).ok());

  QuantizeOptions o = options(in_path, "Q4_0", "imat");
  o.imatrix_path = imat;
  const QuantizeRun r = quantize(o);
  ASSERT_TRUE(r.summary.ok()) << r.summary.status().to_string();
  EXPECT_EQ(r.summary->n_imatrix, 1);
  const io::GgufFile out = open_gguf(o.output_path);
  const io::GgufTensorInfo& q = *out.find_tensor("blk.1.ffn_down.weight");
  const std::vector<float> importance = e.importance(0);
  std::vector<float> row(static_cast<size_t>(n_cols));
  std::vector<uint8_t> want(static_cast<size_t>(dtype_row_bytes(q.type, n_cols))), plain(want.size());
  int differ = 0;
  for (int64_t rr = 0; rr < down.dims[1]; ++rr) {
    std::memcpy(row.data(), down.data + rr * n_cols * 4, static_cast<size_t>(n_cols) * 4);
    quantize_row_weighted(q.type, row.data(), want.data(), n_cols, importance.data());
    quantize_row_weighted(q.type, row.data(), plain.data(), n_cols, nullptr);
    ASSERT_EQ(0, std::memcmp(want.data(), q.data + rr * want.size(), want.size())) << rr;
    differ += want != plain;
  }
  EXPECT_GT(differ, 0);
  // Every other tensor as without an imatrix.
  QuantizeOptions without = options(in_path, "Q4_0", "imat_without");
  ASSERT_TRUE(quantize(without).summary.ok());
  const io::GgufFile out0 = open_gguf(without.output_path);
  for (size_t i = 0; i < out.tensors().size(); ++i) {
    const auto& a = out.tensors()[i];
    if (a.name == "blk.1.ffn_down.weight") continue;
    EXPECT_EQ(0, std::memcmp(a.data, out0.tensors()[i].data, a.n_bytes)) << a.name;
  }

  for (const auto& [name, cols, needle] : {std::tuple{"blk.7.ffn_down.weight", n_cols, "blk.7.ffn_down.weight"},
                                           std::tuple{"blk.0.attn_q.weight", n_cols + 32, "rows of"}}) {
    io::Imatrix other = m;
    io::ImatrixEntry bad = e;
    bad.n_cols = cols;
    bad.sums.resize(static_cast<size_t>(cols), 1.0f);
    other.entries[name] = bad;
    const std::string path = tally_test::temp_dir() + "/other.gguf";
    ASSERT_TRUE(io::imatrix_write(other, path).ok());
    QuantizeOptions ob = options(in_path, "Q4_0", "imat_bad");
    ob.imatrix_path = path;
    const QuantizeRun rb = quantize(ob);
    ASSERT_FALSE(rb.summary.ok()) << name;
    EXPECT_NE(rb.summary.status().message().find(name), std::string::npos) << rb.summary.status().to_string();
    EXPECT_NE(rb.summary.status().message().find(needle), std::string::npos) << rb.summary.status().to_string();
  }
}

}  // namespace
}  // namespace tally::quant
