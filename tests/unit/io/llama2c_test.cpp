// llama2.c import: the converted stories260K matches llama.cpp's own conversion, the Llama 2
// tokenizer.bin matches llama.cpp's llama-spm vocabulary, and broken inputs give a Status.
#include <cstring>
#include <map>

#include <gtest/gtest.h>

#include "io/gguf.h"
#include "io/llama2c.h"
#include "support/test_data.h"

namespace tally::io {
namespace {

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

bool same_value(const GgufValue& a, const GgufValue& b) {
  if (a.type != b.type) return false;
  if (a.type == GgufType::kString) return a.str == b.str;
  if (a.type != GgufType::kArray) return a.num.u64 == b.num.u64;  // bit-exact, -0.0 included
  if (a.elem_type != b.elem_type || a.array_size() != b.array_size()) return false;
  for (size_t i = 0; i < a.array_size(); ++i)
    if (!same_value(a.item(i), b.item(i))) return false;
  return true;
}

TEST(Llama2c, Stories260KMatchesLlamaCppsConversion) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.bin", bin);
  TALLY_REQUIRE_SHARED("models/stories260K/tok512.bin", tok);
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", reference_path);
  Llama2cConvertOptions opt;
  opt.checkpoint_path = bin;
  opt.tokenizer_path = tok;
  opt.output_path = tally_test::temp_dir() + "/stories260K_tally.gguf";
  ASSERT_TRUE(convert_llama2c(opt).ok());
  auto ours = GgufFile::open(opt.output_path);
  ASSERT_TRUE(ours.ok()) << ours.status().to_string();
  auto ref = GgufFile::open(reference_path);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();

  // Intentional differences, with the value we write instead.
  const std::map<std::string_view, int64_t> allowed = {
      // llama.cpp's converter writes its --ctx option (default 2048); tally writes the
      // checkpoint's own seq_len, the context the model was trained with (and the length of
      // its freq_cis tables).
      {"llama.context_length", 512},
  };
  ASSERT_EQ(ours->metadata().size(), ref->metadata().size());
  for (size_t i = 0; i < ref->metadata().size(); ++i) {
    const auto& [key, value] = ref->metadata()[i];
    SCOPED_TRACE(std::string(key));
    EXPECT_EQ(ours->metadata()[i].first, key);  // same order as llama.cpp
    const GgufValue* mine = ours->find(key);
    ASSERT_NE(mine, nullptr);
    if (auto it = allowed.find(key); it != allowed.end()) {
      EXPECT_EQ(mine->type, value.type);
      EXPECT_EQ(mine->as_int(), it->second);
      continue;
    }
    EXPECT_TRUE(same_value(*mine, value)) << mine->to_display_string() << " vs " << value.to_display_string();
  }

  ASSERT_EQ(ours->tensors().size(), ref->tensors().size());
  for (size_t i = 0; i < ref->tensors().size(); ++i) {
    const GgufTensorInfo& r = ref->tensors()[i];
    SCOPED_TRACE(std::string(r.name));
    EXPECT_EQ(ours->tensors()[i].name, r.name);  // same order as llama.cpp
    const GgufTensorInfo* t = ours->find_tensor(r.name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->raw_type, r.raw_type);
    EXPECT_EQ(t->dims, r.dims);
    ASSERT_EQ(t->n_bytes, r.n_bytes);
    EXPECT_EQ(std::memcmp(t->data, r.data, r.n_bytes), 0);
    EXPECT_EQ(t->offset, r.offset);
  }
}

TEST(Llama2c, Llama2TokenizerBinMatchesLlamaCppsVocab) {
  TALLY_REQUIRE_SHARED("models/llama2-tokenizer/tokenizer.bin", tok);
  TALLY_REQUIRE_SHARED("models/ggml-vocab/ggml-vocab-llama-spm.gguf", vocab_path);
  const std::string bytes = tally_test::read_file(tok);
  auto vocab = llama2c_read_tokenizer(as_bytes(bytes), 32000, tok);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  auto ref = GgufFile::open(vocab_path);
  ASSERT_TRUE(ref.ok());
  auto tokens = ref->get_string_array("tokenizer.ggml.tokens").value();
  auto scores = ref->get_f32_array("tokenizer.ggml.scores").value();
  auto types = ref->get_int_array("tokenizer.ggml.token_type").value();
  ASSERT_EQ(vocab->pieces.size(), tokens.size());
  int mismatches = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (vocab->pieces[i] != tokens[i] || std::memcmp(&vocab->scores[i], &scores[i], 4) != 0 ||
        vocab->types[i] != types[i]) {
      if (++mismatches < 5) ADD_FAILURE() << "token " << i << ": '" << vocab->pieces[i] << "' vs '" << tokens[i] << "'";
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// A tiny checkpoint: every float is its own index (so a slice's first value says where it
// came from), vocab_size negative (separate classifier).
struct Toy {
  static constexpr int32_t kDim = 4, kHidden = 6, kLayers = 2, kHeads = 2, kKvHeads = 1, kVocab = 5, kSeq = 3;
  std::string checkpoint;
  std::string tokenizer;

  Toy() {
    const int32_t header[7] = {kDim, kHidden, kLayers, kHeads, kKvHeads, -kVocab, kSeq};
    checkpoint.assign(reinterpret_cast<const char*>(header), sizeof(header));
    const int64_t kv_dim = kDim / kHeads * kKvHeads;
    const int64_t n = kVocab * kDim + kLayers * kDim * 2 + kLayers * kDim * (kDim * 2 + kv_dim * 2) +
                      3 * kLayers * kDim * kHidden + kDim + kSeq * (kDim / kHeads) + kVocab * kDim;
    for (int64_t i = 0; i < n; ++i) {
      const float f = static_cast<float>(i);
      checkpoint.append(reinterpret_cast<const char*>(&f), 4);
    }
    const int32_t max_len = 7;
    tokenizer.assign(reinterpret_cast<const char*>(&max_len), 4);
    for (std::string piece : {"<unk>", "\n<s>\n", "\n</s>\n", "<0x41>", " a b"}) {
      const float score = -static_cast<float>(piece.size());
      const int32_t len = static_cast<int32_t>(piece.size());
      tokenizer.append(reinterpret_cast<const char*>(&score), 4);
      tokenizer.append(reinterpret_cast<const char*>(&len), 4);
      tokenizer += piece;
    }
  }
};

float first_float(const GgufTensorInfo* t) {
  float f = -1;
  if (t && t->n_bytes >= 4) std::memcpy(&f, t->data, 4);
  return f;
}

TEST(Llama2c, ToyCheckpointTensorsComeFromTheRightPlaces) {
  Toy toy;
  auto config = llama2c_read_config(as_bytes(toy.checkpoint), "toy.bin");
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_FALSE(config->shared_classifier);
  EXPECT_EQ(config->vocab_size, 5);
  EXPECT_EQ(config->kv_dim(), 2);

  GgufWriter w;
  ASSERT_TRUE(llama2c_to_gguf(as_bytes(toy.checkpoint), as_bytes(toy.tokenizer), {}, w).ok());
  const auto bytes = w.to_bytes();
  auto f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  // Offsets in floats: emb 0 (20), rms_att 20 (8), wq 28 (32), wk 60 (16), wv 76 (16),
  // wo 92 (32), rms_ffn 124 (8), w1 132 (48), w2 180 (48), w3 228 (48), rms_final 276 (4),
  // freq_cis 280 (3 + 3), wcls 286 (20).
  EXPECT_EQ(first_float(f->find_tensor("token_embd.weight")), 0);
  EXPECT_EQ(first_float(f->find_tensor("output.weight")), 286);
  EXPECT_EQ(first_float(f->find_tensor("output_norm.weight")), 276);
  EXPECT_EQ(first_float(f->find_tensor("blk.1.attn_norm.weight")), 24);
  EXPECT_EQ(first_float(f->find_tensor("blk.1.attn_q.weight")), 44);
  EXPECT_EQ(first_float(f->find_tensor("blk.1.attn_k.weight")), 68);
  EXPECT_EQ(first_float(f->find_tensor("blk.0.attn_v.weight")), 76);
  EXPECT_EQ(first_float(f->find_tensor("blk.1.attn_output.weight")), 108);
  EXPECT_EQ(first_float(f->find_tensor("blk.1.ffn_norm.weight")), 128);
  EXPECT_EQ(first_float(f->find_tensor("blk.1.ffn_gate.weight")), 156);
  EXPECT_EQ(first_float(f->find_tensor("blk.1.ffn_down.weight")), 204);
  EXPECT_EQ(first_float(f->find_tensor("blk.1.ffn_up.weight")), 252);
  EXPECT_EQ(f->find_tensor("blk.1.ffn_down.weight")->dims, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(f->find_tensor("blk.0.attn_k.weight")->dims, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(f->tensors().size(), 3u + 2 * 9);

  EXPECT_EQ(f->get_int("llama.context_length").value(), 3);
  EXPECT_EQ(f->get_int("llama.rope.dimension_count").value(), 2);
  EXPECT_EQ(f->get_string("general.name").value(), "llama");
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens").value(),
            (std::vector<std::string_view>{"<unk>", "<s>", "</s>", "<0x41>", "\xE2\x96\x81" "a\xE2\x96\x81" "b"}));
  EXPECT_EQ(f->get_int_array("tokenizer.ggml.token_type").value(), (std::vector<int64_t>{2, 3, 3, 6, 1}));
  EXPECT_EQ(f->get_f32_array("tokenizer.ggml.scores").value()[4], -4.0f);
}

void expect_checkpoint_error(const std::string& bytes, std::string_view needle,
                             ErrorCode code = ErrorCode::kFormat) {
  auto c = llama2c_read_config(as_bytes(bytes), "bad.bin");
  ASSERT_FALSE(c.ok()) << "expected: " << needle;
  EXPECT_EQ(c.status().code(), code) << c.status().message();
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().message();
}

std::string with_header(std::string bytes, int field, int32_t value) {
  bytes.replace(static_cast<size_t>(field) * 4, 4, reinterpret_cast<const char*>(&value), 4);
  return bytes;
}

TEST(Llama2c, BadCheckpointsAreRejected) {
  const Toy toy;
  const std::string& ok = toy.checkpoint;
  expect_checkpoint_error(ok.substr(0, 27), "too short for the 28-byte header");
  expect_checkpoint_error(with_header(ok, 0, 0x616b3432), "magic \"ak42\") is not supported", ErrorCode::kUnsupported);
  expect_checkpoint_error(with_header(ok, 0, 0), "dim = 0 is not positive at offset 0");
  expect_checkpoint_error(with_header(ok, 4, -1), "n_kv_heads = -1 is not positive at offset 16");
  expect_checkpoint_error(with_header(ok, 6, 0), "seq_len = 0 is not positive at offset 24");
  expect_checkpoint_error(with_header(ok, 5, INT32_MIN), "vocab_size = 0 is invalid");
  expect_checkpoint_error(with_header(ok, 3, 3), "dim 4 is not a multiple of n_heads 3");
  expect_checkpoint_error(with_header(with_header(ok, 3, 4), 4, 3), "n_heads 4 is not a multiple of n_kv_heads 3");
  expect_checkpoint_error(with_header(ok, 3, 4), "head size 1 is odd");
  expect_checkpoint_error(ok.substr(0, ok.size() - 4), "file has 1248 bytes but the header");
  expect_checkpoint_error(with_header(ok, 5, 5), "needs 1172");  // shared classifier: 20 floats fewer
  std::string absurd = with_header(with_header(with_header(ok, 0, 1 << 30), 1, INT32_MAX), 2, INT32_MAX);
  expect_checkpoint_error(with_header(absurd, 3, 2), "overflow");
}

TEST(Llama2c, BadTokenizersAreRejected) {
  const Toy toy;
  const std::string& tok = toy.tokenizer;
  auto read = [](const std::string& bytes, int32_t vocab) {
    return llama2c_read_tokenizer(as_bytes(bytes), vocab, "tok.bin");
  };
  ASSERT_TRUE(read(tok, 5).ok());
  for (size_t n = 0; n < tok.size(); ++n) {
    auto v = read(tok.substr(0, n), 5);
    ASSERT_FALSE(v.ok()) << n;
    EXPECT_NE(v.status().message().find(" at offset "), std::string::npos) << v.status().message();
  }
  EXPECT_NE(read(tok + "x", 5).status().message().find("1 bytes left after the 5 tokens"), std::string::npos);
  EXPECT_NE(read(tok, 1000000).status().message().find("1000000 tokens need at least 8000000 bytes"),
            std::string::npos);
  std::string long_piece = tok;
  const int32_t big = 8;  // > max_token_length (7)
  std::memcpy(long_piece.data() + 4 + 4, &big, 4);
  EXPECT_NE(read(long_piece, 5).status().message().find("token 0: length 8 is outside 0..max_token_length (7) at offset 8"),
            std::string::npos);
  std::string negative = tok;
  const int32_t minus = -1;
  std::memcpy(negative.data(), &minus, 4);
  EXPECT_NE(read(negative, 5).status().message().find("max_token_length -1 is not positive"), std::string::npos);
}

TEST(Llama2c, ConvertReportsMissingFiles) {
  Llama2cConvertOptions opt;
  opt.checkpoint_path = tally_test::temp_dir() + "/missing.bin";
  opt.tokenizer_path = opt.checkpoint_path;
  opt.output_path = tally_test::temp_dir() + "/never.gguf";
  const Status st = convert_llama2c(opt);
  EXPECT_EQ(st.code(), ErrorCode::kNotFound);
  EXPECT_NE(st.message().find("llama2c checkpoint: "), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tally::io
