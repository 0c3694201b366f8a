// Tokenizer metadata is copied key for key, padded with control placeholders up to the
// model's vocab size, and nothing outside tokenizer.* comes along.
#include "synth/synthetic_vocab.h"

#include <gtest/gtest.h>

#include "support/test_data.h"
#include "synthetic_test_util.h"

namespace tally::synth {
namespace {

io::GgufFile reparse(const std::vector<uint8_t>& bytes) {
  auto f = io::GgufFile::parse(bytes);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  return std::move(f).value();
}

// The model's own added tokens come first in the padding (Phi-3's "<|endoftext|>").
TEST(SyntheticVocab, AddedTokensTakeTheFirstPaddingIds) {
  const std::string path = tally_test::write_tiny_vocab(tally_test::temp_dir(), 5);
  auto vocab = io::GgufFile::open(path);
  ASSERT_TRUE(vocab.ok());
  io::GgufWriter w;
  ASSERT_TRUE(copy_tokenizer_metadata(*vocab, 8, w, {"<|endoftext|>"}).ok());
  const auto bytes = w.to_bytes();
  const auto tokens = *reparse(bytes).get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 8u);
  EXPECT_EQ(tokens[4], "tok4");
  EXPECT_EQ(tokens[5], "<|endoftext|>");
  EXPECT_EQ(tokens[6], "<|tally_placeholder_6|>");
  std::remove(path.c_str());
}

TEST(SyntheticVocab, PadsPerTokenArraysWithControlPlaceholders) {
  const std::string path = tally_test::write_tiny_vocab(tally_test::temp_dir(), 5);
  auto vocab = io::GgufFile::open(path);
  ASSERT_TRUE(vocab.ok());
  io::GgufWriter w;
  w.set_string("general.architecture", "qwen2");
  auto copy = copy_tokenizer_metadata(*vocab, 8, w);
  ASSERT_TRUE(copy.ok()) << copy.status().to_string();
  EXPECT_EQ(copy->n_file_tokens, 5);
  EXPECT_EQ(copy->n_placeholders, 3);

  const auto bytes = w.to_bytes();
  const io::GgufFile out = reparse(bytes);
  EXPECT_EQ(*out.get_string("general.architecture"), "qwen2");  // the vocab's own was not copied
  const auto tokens = *out.get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 8u);
  EXPECT_EQ(tokens[4], "tok4");
  EXPECT_EQ(tokens[5], "<|tally_placeholder_5|>");
  EXPECT_EQ(tokens[7], "<|tally_placeholder_7|>");
  const auto scores = *out.get_f32_array("tokenizer.ggml.scores");
  ASSERT_EQ(scores.size(), 8u);
  EXPECT_EQ(scores[4], -4.0f);
  EXPECT_EQ(scores[6], 0.0f);
  const auto types = *out.get_int_array("tokenizer.ggml.token_type");
  ASSERT_EQ(types.size(), 8u);
  EXPECT_EQ(types[4], 1);
  EXPECT_EQ(types[7], kTokenTypeControl);
  EXPECT_EQ(*out.get_int("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_EQ(*out.get_string("tokenizer.ggml.model"), "llama");
  std::remove(path.c_str());
}

TEST(SyntheticVocab, ExactSizeAddsNothingAndTooManyTokensIsAnError) {
  const std::string path = tally_test::write_tiny_vocab(tally_test::temp_dir(), 6);
  auto vocab = io::GgufFile::open(path);
  ASSERT_TRUE(vocab.ok());
  io::GgufWriter exact;
  auto copy = copy_tokenizer_metadata(*vocab, 6, exact);
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(copy->n_placeholders, 0);
  io::GgufWriter small;
  auto err = copy_tokenizer_metadata(*vocab, 5, small);
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("6 tokens do not fit a vocabulary of 5"), std::string::npos);

  io::GgufWriter no_tokens_src;
  no_tokens_src.set_string("tokenizer.ggml.model", "gpt2");
  const auto bytes = no_tokens_src.to_bytes();
  io::GgufWriter out;
  EXPECT_FALSE(copy_tokenizer_metadata(reparse(bytes), 10, out).ok());
  std::remove(path.c_str());
}

TEST(SyntheticVocab, Gpt2VocabPaddedToQwenSize) {
  TALLY_REQUIRE_SHARED("models/ggml-vocab/ggml-vocab-gpt-2.gguf", path);
  auto vocab = io::GgufFile::open(path);
  ASSERT_TRUE(vocab.ok());
  io::GgufWriter w;
  auto copy = copy_tokenizer_metadata(*vocab, 151936, w);
  ASSERT_TRUE(copy.ok()) << copy.status().to_string();
  EXPECT_EQ(copy->n_file_tokens, 50257);
  EXPECT_EQ(copy->n_placeholders, 151936 - 50257);
  const auto bytes = w.to_bytes();
  const io::GgufFile out = reparse(bytes);
  EXPECT_EQ(out.get_string_array("tokenizer.ggml.tokens")->size(), 151936u);
  EXPECT_EQ(out.get_int_array("tokenizer.ggml.token_type")->size(), 151936u);
  // Merges and the BPE settings come over unchanged.
  EXPECT_EQ(out.get_string_array("tokenizer.ggml.merges")->size(),
            vocab->get_string_array("tokenizer.ggml.merges")->size());
  EXPECT_EQ(*out.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(*out.get_string("tokenizer.ggml.pre"), *vocab->get_string("tokenizer.ggml.pre"));
}

TEST(SyntheticVocab, LlamaSpmVocabIsCopiedWhole) {
  TALLY_REQUIRE_SHARED("models/ggml-vocab/ggml-vocab-llama-spm.gguf", path);
  auto vocab = io::GgufFile::open(path);
  ASSERT_TRUE(vocab.ok());
  io::GgufWriter w;
  auto copy = copy_tokenizer_metadata(*vocab, 32000, w);
  ASSERT_TRUE(copy.ok()) << copy.status().to_string();
  EXPECT_EQ(copy->n_placeholders, 0);
  const auto bytes = w.to_bytes();
  const io::GgufFile out = reparse(bytes);
  EXPECT_EQ(*out.get_string_array("tokenizer.ggml.tokens"), *vocab->get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(*out.get_f32_array("tokenizer.ggml.scores"), *vocab->get_f32_array("tokenizer.ggml.scores"));
  EXPECT_EQ(*out.get_int_array("tokenizer.ggml.token_type"), *vocab->get_int_array("tokenizer.ggml.token_type"));
  size_t n_keys = 0;
  for (const auto& [key, value] : vocab->metadata()) n_keys += key.starts_with("tokenizer.");
  EXPECT_EQ(out.metadata().size(), n_keys);  // every tokenizer.* key, nothing else
}

}  // namespace
}  // namespace tally::synth
