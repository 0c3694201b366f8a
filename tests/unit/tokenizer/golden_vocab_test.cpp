// llama.cpp's golden tokenizer vectors (models/ggml-vocab-*.gguf.inp/.out; the expected ids
// come from the Hugging Face tokenizers): every case, add_special = false,
// parse_special = false, for each vocabulary that ships with its GGUF.
#include <gtest/gtest.h>

#include <chrono>

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
