// llama.cpp's golden tokenizer vectors (models/ggml-vocab-*.gguf.inp/.out; the expected ids
// come from the Hugging Face tokenizers): every case, add_special = false,
// parse_special = false, for each vocabulary that ships with its GGUF.
#include <gtest/gtest.h>

#include <algorithm>

#include "support/test_data.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace tally {
namespace {

using tally_test::escaped;
using tally_test::ids_to_string;

class GoldenVocabTest : public ::testing::TestWithParam<const char*> {};

std::string vocab_path(const char* name) {
  return std::string(tally_test::kVocabDir) + "/ggml-vocab-" + name + ".gguf";
}

TEST_P(GoldenVocabTest, EveryCaseMatchesTheReferenceIds) {
  TALLY_REQUIRE_SHARED(vocab_path(GetParam()), gguf);
  const auto inputs = tally_test::read_vocab_inputs(gguf + ".inp");
  const auto expected = tally_test::read_vocab_outputs(gguf + ".out");
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_GE(inputs.size(), 40u);
  auto tok = tally_test::load_gguf_tokenizer(gguf);
  ASSERT_NE(tok, nullptr);
  int failures = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int32_t> got = tok->encode(inputs[i], false, false);
    if (got != expected[i]) ++failures;
    EXPECT_EQ(ids_to_string(got), ids_to_string(expected[i]))
        << "case " << i << ": \"" << escaped(inputs[i]) << "\"";
  }
  EXPECT_EQ(failures, 0);
}

// decode(encode(s)) == s: holds for every case of these vocabularies (all inputs are valid
// UTF-8; SPM's decode drops the one space its encoder prefixed).
TEST_P(GoldenVocabTest, DecodeGivesBackTheText) {
  TALLY_REQUIRE_SHARED(vocab_path(GetParam()), gguf);
  const auto inputs = tally_test::read_vocab_inputs(gguf + ".inp");
  auto tok = tally_test::load_gguf_tokenizer(gguf);
  ASSERT_NE(tok, nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int32_t> ids = tok->encode(inputs[i], false, false);
    EXPECT_EQ(escaped(tok->decode(ids)), escaped(inputs[i])) << "case " << i;
  }
}

// Control tokens of real vocabularies: parsed only on request, never produced from text
// otherwise, and the end-of-generation set llama.cpp derives.
TEST(GoldenVocab, Phi3ChatTokens) {
  TALLY_REQUIRE_SHARED(vocab_path("phi-3"), gguf);
  auto tok = tally_test::load_gguf_tokenizer(gguf);
  ASSERT_NE(tok, nullptr);
  const std::string chat = "<|user|>\nHi<|end|>\n<|assistant|>";
  const std::vector<int32_t> parsed = tok->encode(chat, true, true);
  ASSERT_GE(parsed.size(), 5u);
  EXPECT_EQ(parsed[0], 1);       // BOS (add_bos_token = true)
  EXPECT_EQ(parsed[1], 32010);   // <|user|>
  EXPECT_EQ(parsed.back(), 32001);  // <|assistant|>
  EXPECT_NE(std::find(parsed.begin(), parsed.end(), 32007), parsed.end());  // <|end|>
  const std::vector<int32_t> plain = tok->encode(chat, false, false);
  for (int32_t id : plain) EXPECT_FALSE(tok->is_control(id)) << id;
  EXPECT_EQ(tok->decode(plain), chat);
  // Control tokens skipped. As llama.cpp, the encoder put a U+2581 before the text after each
  // special token; decode drops only the one at the start, so the one after <|end|> stays.
  EXPECT_EQ(tok->decode(parsed), "\nHi \n");
  EXPECT_TRUE(tok->is_eog(32000));  // <|endoftext|> = EOS
  EXPECT_TRUE(tok->is_eog(32007));  // <|end|>
  EXPECT_FALSE(tok->is_eog(32010));
  EXPECT_EQ(tok->eos(), 32000);
}

TEST(GoldenVocab, Gpt2EndOfText) {
  TALLY_REQUIRE_SHARED(vocab_path("gpt-2"), gguf);
  auto tok = tally_test::load_gguf_tokenizer(gguf);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->kind(), TokenizerKind::kBpe);
  EXPECT_EQ(tok->n_vocab(), 50257);
  EXPECT_EQ(tok->encode("a<|endoftext|>", false, true), (std::vector<int32_t>{64, 50256}));
  EXPECT_GT(tok->encode("a<|endoftext|>", false, false).size(), 2u);
  EXPECT_FALSE(tok->add_bos());  // no add_bos_token key: llama.cpp's BPE default
  EXPECT_EQ(tok->encode("a", true, false), (std::vector<int32_t>{64}));
  EXPECT_TRUE(tok->is_eog(50256));
  EXPECT_EQ(tok->decode(std::vector<int32_t>{64, 50256}, false), "a<|endoftext|>");
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GoldenVocabTest,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "mpt", "falcon",
                                           "starcoder", "refact", "deepseek-llm",
                                           "deepseek-coder"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace tally
