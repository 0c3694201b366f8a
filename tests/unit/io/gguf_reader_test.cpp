// GgufFile over real files (llama.cpp's own conversions) and over small hand-built ones.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "gguf_bytes.h"
#include "io/gguf.h"
#include "support/test_data.h"

namespace tally::io {
namespace {

using tally_test::GgufBytes;

TEST(GgufReader, Stories260KMetadataAndTensors) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", path);
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->metadata().size(), 19u);
  EXPECT_EQ(f->tensors().size(), 48u);
  EXPECT_EQ(f->data_offset(), 14176u);  // end of tensor infos (14152) rounded up to 32

  EXPECT_EQ(f->get_string("general.architecture").value(), "llama");
  EXPECT_EQ(f->get_int("llama.embedding_length").value(), 64);
  EXPECT_EQ(f->get_int("llama.feed_forward_length").value(), 172);
  EXPECT_EQ(f->get_int("llama.attention.head_count_kv").value(), 4);
  EXPECT_EQ(f->get_int("tokenizer.ggml.padding_token_id").value(), 4294967295);
  EXPECT_EQ(static_cast<float>(f->get_float("llama.attention.layer_norm_rms_epsilon").value()), 1e-5f);
  EXPECT_EQ(f->metadata()[0].first, "tokenizer.ggml.tokens");  // file order is kept

  auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 512u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[3], "<0x00>");
  EXPECT_EQ((*tokens)[259], "\xE2\x96\x81t");  // "▁t"
  auto scores = f->get_f32_array("tokenizer.ggml.scores");
  ASSERT_TRUE(scores.ok());
  EXPECT_EQ((*scores)[260], -1.0f);
  EXPECT_EQ((*scores)[300], -41.0f);
  auto types = f->get_int_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.ok());
  EXPECT_EQ((*types)[0], 2);
  EXPECT_EQ((*types)[1], 3);
  EXPECT_EQ((*types)[3], 6);
  EXPECT_EQ((*types)[300], 1);

  const GgufTensorInfo* emb = f->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, DType::kF32);
  EXPECT_EQ(emb->dims, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(emb->n_elements(), 64 * 512);
  EXPECT_EQ(emb->n_bytes, 64u * 512 * 4);
  const GgufTensorInfo* down = f->find_tensor("blk.4.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->dims, (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(down->offset, 1082880u);
  EXPECT_EQ(down->data, emb->data + (down->offset - emb->offset));
  EXPECT_EQ(f->find_tensor("blk.5.ffn_down.weight"), nullptr);

  // The embedding's bytes are the llama2.c checkpoint's (right after its 28-byte header).
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.bin", bin_path);
  std::string bin = tally_test::read_file(bin_path);
  ASSERT_GE(bin.size(), 28 + emb->n_bytes);
  EXPECT_EQ(std::memcmp(bin.data() + 28, emb->data, emb->n_bytes), 0);
}

struct VocabFile {
  const char* name;
  size_t n_tokens;
  size_t n_merges;  // 0: no merges (SentencePiece / WordPiece)
};

TEST(GgufReader, VocabFilesFromLlamaCpp) {
  const VocabFile files[] = {
      {"llama-spm", 32000, 0},      {"phi-3", 32064, 0},        {"bert-bge", 30522, 0},
      {"gpt-2", 50257, 50000},      {"deepseek-coder", 32256, 31757},
      {"deepseek-llm", 102400, 99757}, {"falcon", 65024, 64784}, {"starcoder", 49152, 48872},
  };
  for (const VocabFile& v : files) {
    TALLY_REQUIRE_SHARED(std::string("models/ggml-vocab/ggml-vocab-") + v.name + ".gguf", path);
    SCOPED_TRACE(path);
    auto f = GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_TRUE(f->tensors().empty());
    auto tokens = f->get_string_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.ok()) << tokens.status().to_string();
    EXPECT_EQ(tokens->size(), v.n_tokens);
    auto types = f->get_int_array("tokenizer.ggml.token_type");
    ASSERT_TRUE(types.ok());
    EXPECT_EQ(types->size(), v.n_tokens);
    auto merges = f->get_string_array("tokenizer.ggml.merges");
    if (v.n_merges) {
      ASSERT_TRUE(merges.ok()) << merges.status().to_string();
      EXPECT_EQ(merges->size(), v.n_merges);
    } else {
      EXPECT_EQ(merges.status().code(), ErrorCode::kNotFound);
    }
  }
}

TEST(GgufReader, LlamaSpmBoolsAndDisplay) {
  TALLY_REQUIRE_SHARED("models/ggml-vocab/ggml-vocab-llama-spm.gguf", path);
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_TRUE(f->get_bool("tokenizer.ggml.add_bos_token").value());
  EXPECT_FALSE(f->get_bool("tokenizer.ggml.add_eos_token").value());
  const GgufValue* tokens = f->find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->to_display_string(3), "[\"<unk>\", \"<s>\", \"</s>\", ... (32000 items)]");
  EXPECT_EQ(f->find("llama.attention.layer_norm_rms_epsilon")->to_display_string(), "1e-05");
}

TEST(GgufReader, TypedGettersReportMissingAndWrongTypes) {
  GgufBytes b;
  b.header(0, 6)
      .kv_u32("a.u32", 7)
      .kv_str("a.str", "hi")
      .str("a.u64").type(GgufType::kU64).u64(~uint64_t{0})
      .str("a.f64").type(GgufType::kF64).raw("\0\0\0\0\0\0\xf8\x3f", 8)  // 1.5
      .str("a.i32s").type(GgufType::kArray).type(GgufType::kI32).u64(2).i32(-3).i32(5)
      .str("a.f64s").type(GgufType::kArray).type(GgufType::kF64).u64(1).raw("\x9a\x99\x99\x99\x99\x99\xb9\x3f", 8);  // 0.1
  auto f = GgufFile::parse(b.span(), "t.gguf");
  ASSERT_TRUE(f.ok()) << f.status().to_string();

  EXPECT_EQ(f->get_int("a.u32").value(), 7);
  EXPECT_EQ(f->get_float("a.u32").value(), 7.0);  // integers read as numbers
  EXPECT_EQ(f->get_float("a.f64").value(), 1.5);
  EXPECT_EQ(f->get_int("missing").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(f->get_int_or("missing", 42).value(), 42);
  EXPECT_EQ(f->get_int_or("a.u32", 42).value(), 7);
  auto wrong = f->get_int("a.str");
  EXPECT_EQ(wrong.status().code(), ErrorCode::kFormat);
  EXPECT_NE(wrong.status().message().find("'a.str' is string, expected an integer"), std::string::npos)
      << wrong.status().message();
  EXPECT_EQ(f->get_int_or("a.str", 1).status().code(), ErrorCode::kFormat);  // present: still checked
  EXPECT_EQ(f->get_int("a.u64").status().code(), ErrorCode::kFormat);        // 2^64-1 does not fit
  EXPECT_EQ(f->get_bool("a.u32").status().code(), ErrorCode::kFormat);
  EXPECT_EQ(f->get_string("a.u32").status().code(), ErrorCode::kFormat);
  EXPECT_EQ(f->get_string_array("a.i32s").status().code(), ErrorCode::kFormat);
  EXPECT_EQ(f->get_int_array("a.i32s").value(), (std::vector<int64_t>{-3, 5}));
  EXPECT_EQ(f->get_f32_array("a.i32s").value(), (std::vector<float>{-3.0f, 5.0f}));
  // 0.1 as f64 is not exactly an f32: converting would silently change it.
  EXPECT_EQ(f->get_f32_array("a.f64s").status().code(), ErrorCode::kFormat);
  EXPECT_EQ(f->get_int_array("a.f64s").status().code(), ErrorCode::kFormat);
}

TEST(GgufReader, ValueAccessorsAndDisplay) {
  GgufValue v;
  v.type = GgufType::kI16;
  v.num.i64 = -5;
  EXPECT_TRUE(v.is_integer());
  EXPECT_EQ(v.as_int(), -5);
  EXPECT_EQ(v.as_float(), -5.0);
  EXPECT_EQ(v.as_bool(), std::nullopt);
  EXPECT_EQ(v.to_display_string(), "-5");

  GgufValue s;
  s.type = GgufType::kString;
  s.str = "a\"b\n\x01";
  EXPECT_FALSE(s.is_integer());
  EXPECT_EQ(s.as_int(), std::nullopt);
  EXPECT_EQ(s.to_display_string(), "\"a\\\"b\\n\\x01\"");

  GgufValue arr;
  arr.type = GgufType::kArray;
  arr.elem_type = GgufType::kArray;
  arr.items.resize(2);
  for (auto& inner : arr.items) {
    inner.type = GgufType::kArray;
    inner.elem_type = GgufType::kBool;
    inner.items.resize(1);
    inner.items[0].type = GgufType::kBool;
    inner.items[0].num.u64 = 1;
  }
  EXPECT_EQ(arr.to_display_string(), "[[true], [true]]");
  EXPECT_EQ(arr.to_display_string(1), "[[true], ... (2 items)]");
  EXPECT_EQ(arr.to_display_string(0), "[... (2 items)]");
  EXPECT_EQ(gguf_type_name(GgufType::kF64), "f64");
}

TEST(GgufReader, MinimalFileWithOneTensor) {
  GgufBytes b;
  b.header(1, 1).kv_str("general.architecture", "toy").tensor("w", {2, 3}, 0, 0).pad(32);
  const size_t data_at = b.size();
  for (int i = 0; i < 6; ++i) b.f32(static_cast<float>(i));
  auto f = GgufFile::parse(b.span(), "toy.gguf");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->name(), "toy.gguf");
  EXPECT_EQ(f->data_offset(), data_at);
  const GgufTensorInfo& t = f->tensors().at(0);
  EXPECT_EQ(t.name, "w");
  EXPECT_EQ(t.n_bytes, 24u);
  ASSERT_EQ(t.bytes().size(), 24u);
  float last = 0;
  std::memcpy(&last, t.bytes().data() + 20, 4);
  EXPECT_EQ(last, 5.0f);
}

TEST(GgufReader, Version2IsAccepted) {
  GgufBytes b;
  b.header(0, 1, /*version=*/2).kv_u32("x", 1);
  auto f = GgufFile::parse(b.span());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 2u);
}

TEST(GgufReader, CustomAlignmentMovesTheDataSection) {
  GgufBytes b;
  b.header(1, 1).kv_u32("general.alignment", 64).tensor("w", {4}, 0, 0).pad(64);
  const size_t data_at = b.size();
  b.zeros(16);
  auto f = GgufFile::parse(b.span());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset(), data_at);
  EXPECT_EQ(data_at % 64, 0u);
}

TEST(GgufReader, OpenMissingFileIsNotFound) {
  auto f = GgufFile::open(tally_test::temp_dir() + "/does-not-exist.gguf");
  EXPECT_EQ(f.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace tally::io
